"""``/api/world-books``: the seed's world-book endpoints (CRUD, entries, ai-generate, test-match).

Reads (GET) are open; ``test-match`` (it stores nothing and touches no cooldown, but runs the
recall over every book) needs the bearer token, or — with ``NEKOFLOW_API_PUBLIC_READS`` — is
rate-limited per client, and a scope's cooldown state (``scope_id``) always needs the token. Its
caller-chosen ``config`` is capped at the server's (regex timeout, recursion, history windows) and
the books come from the same revision-keyed cache as a turn's. Every other POST/PUT/DELETE needs
the bearer token. ``ai-generate`` needs it even when it does not
save, because it spends model tokens. Handlers are plain ``def`` so FastAPI runs them in its thread
pool (the store and the chat model block).
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import redis
from fastapi import APIRouter, Depends, status
from pydantic import Field
from sqlmodel import Session

from nekoflow.api.ai_generate import (
    GenerationReplyError,
    build_generation_messages,
    parse_generated_entries,
)
from nekoflow.api.deps import (
    ApiState,
    StateDep,
    StoreDep,
    WriteAuth,
    require_token_or_public_rate,
)
from nekoflow.api.errors import ApiError, conflict, not_found
from nekoflow.api.schemas import (
    AiGenerateIn,
    AiGenerateResponse,
    BatchEntriesIn,
    BookCreate,
    BookIdPath,
    BookResponse,
    BookUpdate,
    EntriesResponse,
    EntryIdPath,
    EntryIn,
    EntryResponse,
    ErrorResponse,
    SuccessResponse,
    TestMatchIn,
    TestMatchItem,
    TestMatchResponse,
    WorldBookOut,
)
from nekoflow.errors import InputError
from nekoflow.llm.base import LLMError, LLMTimeoutError
from nekoflow.turns.characters import resolve_role
from nekoflow.turns.lore_preview import ScopeView, scope_view
from nekoflow.worldbook.budgets import recall_config_of
from nekoflow.worldbook.cooldowns import CooldownState
from nekoflow.worldbook.matcher import describe_recall
from nekoflow.worldbook.models import (
    DroppedEntry,
    WorldBook,
    WorldBookEntry,
    WorldBookRecallConfig,
    WorldBookRecallContext,
)
from nekoflow.worldbook.redis_cooldowns import RedisCooldowns
from nekoflow.worldbook.store import WorldBookStore

log = logging.getLogger("nekoflow.api")

router = APIRouter(prefix="/api/world-books", tags=["world-books"])

_E = ErrorResponse
_READ: dict[int | str, dict[str, Any]] = {404: {"model": _E, "description": "Unknown id"}}
_WRITE: dict[int | str, dict[str, Any]] = {
    401: {"model": _E, "description": "Missing or wrong bearer token"},
    404: {"model": _E, "description": "Unknown id"},
    503: {"model": _E, "description": "NEKOFLOW_API_TOKEN not configured"},
}
_CONFLICT: dict[int | str, dict[str, Any]] = {409: {"model": _E, "description": "Id already taken"}}
_MODEL: dict[int | str, dict[str, Any]] = {
    502: {"model": _E, "description": "The chat model failed or returned no usable entries"},
    504: {"model": _E, "description": "The chat model timed out"},
}


class TestMatchHit(TestMatchItem):
    """One hit; ``cut_to`` (content characters kept) when it was cut to fit its budget."""

    __test__ = False

    cut_to: int | None = Field(default=None, description="Absent unless the entry was cut")
    unknown_macros: list[str] | None = Field(
        default=None,
        description="Macros of the entry nekoflow does not know (sent as written unless "
        "NEKOFLOW_UNKNOWN_MACROS=strip); absent when none",
    )


class TestMatchResult(TestMatchResponse):
    """The seed's test-match answer plus ``dropped``: matched entries left out, with the reason
    (and, for ``over_budget``, the budget needed and left), and ``regex_timeouts``; both are
    left out when empty, so an answer without drops is exactly the seed's."""

    __test__ = False

    matches: list[TestMatchHit]  # type: ignore[assignment]
    dropped: list[DroppedEntry] | None = Field(default=None, description="Absent when none")
    regex_timeouts: list[str] | None = Field(default=None, description="Absent when none")


def _scope_view(state: ApiState, scope_id: str, character: str | None) -> ScopeView:
    """What the scope's next turn scans (:mod:`nekoflow.turns.lore_preview`); ``character`` is
    a character's id or name (else the scope's latest turn's character); a name that is no
    character (books may be bound to any name) scans no history."""
    role_id: int | None = None
    if character:
        with Session(state.engine) as s:
            role = resolve_role(s, character)
        if role is None or role.id is None:  # a name books are bound to, not a character:
            return ScopeView(role_id=None, role_name="", messages=[])  # no history to scan
        role_id = role.id
    try:
        return scope_view(
            state.engine, scope_id, role_id=role_id, history_limit=state.settings.history_limit
        )
    except InputError as exc:
        raise ApiError(422, str(exc), field=exc.field or "scope_id") from None


def _cooldown_snapshot(state: ApiState, scope_id: str) -> CooldownState | None:
    """The scope's timed-effect state (read only), when cooldowns live in Redis."""
    if not scope_id or not state.settings.uses_redis_cooldowns:
        return None
    try:
        store = RedisCooldowns(state.redis(), prefix=state.settings.redis_prefix)
        return store.snapshot(scope_id)
    except redis.RedisError as exc:
        raise ApiError(
            503, "Redis unavailable: cooldowns cannot be read", field="scope_id"
        ) from exc


CAPPED_FIELDS = (
    "regex_timeout",
    "max_recursion_steps",
    "max_history_chars",
    "recent_message_limit",
)
"""Recall settings a test-match caller may lower but never raise above the server's."""


def capped_config(
    asked: WorldBookRecallConfig | None, server: WorldBookRecallConfig
) -> WorldBookRecallConfig:
    """The caller's config with :data:`CAPPED_FIELDS` at most the server's (the server's when
    none was given)."""
    if asked is None:
        return server
    caps = {name: min(getattr(asked, name), getattr(server, name)) for name in CAPPED_FIELDS}
    return asked.model_copy(update=caps)


def _book_or_404(store: WorldBookStore, book_id: str) -> WorldBook:
    book = store.get(book_id)
    if book is None:
        raise not_found("world book", book_id, "book_id")
    return book


# --------------------------------------------------------------------------------- test-match
# Declared before the /{book_id} routes so "test-match" is never taken for a book id.


@router.post(
    "/test-match",
    response_model=TestMatchResult,
    response_model_exclude_none=True,
    responses={
        401: {"model": _E, "description": "Missing or wrong bearer token (or scope_id without it)"},
        429: {"model": _E, "description": "Public reads: too many anonymous calls this minute"},
        503: {"model": _E, "description": "NEKOFLOW_API_TOKEN not configured"},
    },
    summary="Test keyword matching (simple or multi-source mode)",
)
def try_match(
    body: TestMatchIn,
    state: StateDep,
    with_token: Annotated[bool, Depends(require_token_or_public_rate)],
) -> TestMatchResult:
    """Run the recall over every stored world book and return the hits in the seed's shape,
    plus the matched entries that were dropped and why (over budget, probability, group lost,
    max entries…). Without ``config`` the budgets are the ones a turn uses (from the settings:
    ``NEKOFLOW_LLM_CONTEXT_WINDOW`` × ``NEKOFLOW_LORE_BUDGET_SHARE``). With ``scope_id`` and
    cooldowns in Redis, the scope's cooldown / sticky / delay state is read (never written), so
    entries held back by it are listed as dropped too."""
    context = WorldBookRecallContext(
        latest_user_message=body.message,
        recent_messages=[m.model_dump() for m in body.recent_messages],
        scene=body.scene,
        assistant_recent_text=body.assistant_recent_text,
        history_text=body.history_text,
        active_entry_ids=body.active_entry_ids,
        character_id=body.character_id or "",
        target_id=body.target_id,
        scope_id=body.scope_id,
    )
    if body.scope_id and not with_token:
        raise ApiError(401, "scope_id: a scope's cooldown state needs the bearer token")
    settings = state.settings
    character_id = body.character_id or None
    if body.scope_id:  # scan what the scope's next turn would: its history (or greeting)
        view = _scope_view(state, body.scope_id, character_id)
        if view.role_id is not None:
            character_id = str(view.role_id)
            context.character_id = view.role_name
            context.recent_messages = [*view.messages, *context.recent_messages]
    config = capped_config(body.config, recall_config_of(settings))
    outcome = describe_recall(
        context,
        state.book_cache().books(),
        character_id,
        config,
        cooldowns=_cooldown_snapshot(state, body.scope_id),
    )
    fields = TestMatchHit.model_fields
    return TestMatchResult(
        matches=[
            TestMatchHit(**{k: hit[k] for k in fields if k in hit}) for hit in outcome["matches"]
        ],
        dropped=[DroppedEntry(**d) for d in outcome["dropped"]] or None,
        regex_timeouts=outcome["regex_timeouts"] or None,
    )


# ---------------------------------------------------------------------------------- books


@router.get("", response_model=list[WorldBookOut], summary="List world books")
def list_world_books(store: StoreDep) -> list[WorldBookOut]:
    """Every world book with its entries and entry count, in stored order."""
    return [WorldBookOut.of(b) for b in store.list_all()]


@router.post(
    "",
    response_model=BookResponse,
    status_code=status.HTTP_201_CREATED,
    dependencies=[WriteAuth],
    responses={**_WRITE, **_CONFLICT},
    summary="Create a world book",
)
def create_world_book(body: BookCreate, store: StoreDep) -> BookResponse:
    """Create a book (and its first entries); 409 when the given id is taken."""
    if body.id and store.get(body.id) is not None:
        raise conflict(f"world book {body.id!r} already exists", "id")
    try:
        book = store.create(
            body.name,
            body.description,
            body.character_ids,
            body.enabled,
            id=body.id or None,
            entries=body.entries,
        )
    except InputError as exc:
        if exc.field == "id":  # lost a race with another create of the same id
            raise conflict(str(exc), "id") from exc
        raise
    return BookResponse(world_book=WorldBookOut.of(book))


@router.get(
    "/{book_id}", response_model=WorldBookOut, responses=_READ, summary="Get one world book"
)
def get_world_book(book_id: BookIdPath, store: StoreDep) -> WorldBookOut:
    """One world book with its entries."""
    return WorldBookOut.of(_book_or_404(store, book_id))


@router.put(
    "/{book_id}",
    response_model=BookResponse,
    dependencies=[WriteAuth],
    responses=_WRITE,
    summary="Update a world book",
)
def update_world_book(book_id: BookIdPath, body: BookUpdate, store: StoreDep) -> BookResponse:
    """Change name, description, character_ids and/or enabled (fields left out keep their value)."""
    changes = body.changes()
    if not changes:
        raise InputError(
            "no fields to update (name, description, character_ids, enabled)", field="body"
        )
    book = store.update(book_id, **changes)
    if book is None:
        raise not_found("world book", book_id, "book_id")
    return BookResponse(world_book=WorldBookOut.of(book))


@router.delete(
    "/{book_id}",
    response_model=SuccessResponse,
    dependencies=[WriteAuth],
    responses=_WRITE,
    summary="Delete a world book and its entries",
)
def delete_world_book(book_id: BookIdPath, store: StoreDep) -> SuccessResponse:
    """Delete a book with all its entries."""
    if not store.delete(book_id):
        raise not_found("world book", book_id, "book_id")
    return SuccessResponse()


# ---------------------------------------------------------------------------------- entries


@router.get(
    "/{book_id}/entries",
    response_model=list[WorldBookEntry],
    responses=_READ,
    summary="List a book's entries",
)
def list_entries(book_id: BookIdPath, store: StoreDep) -> list[WorldBookEntry]:
    """A book's entries in order."""
    entries = store.list_entries(book_id)
    if entries is None:
        raise not_found("world book", book_id, "book_id")
    return entries


@router.post(
    "/{book_id}/entries",
    response_model=EntryResponse,
    status_code=status.HTTP_201_CREATED,
    dependencies=[WriteAuth],
    responses={**_WRITE, **_CONFLICT},
    summary="Add an entry",
)
def create_entry(book_id: BookIdPath, body: EntryIn, store: StoreDep) -> EntryResponse:
    """Append one entry (id generated when empty); 409 when its id is taken in this book."""
    entries = store.list_entries(book_id)
    if entries is None:
        raise not_found("world book", book_id, "book_id")
    if body.id and any(e.id == body.id for e in entries):
        raise conflict(f"entry {body.id!r} already exists in world book {book_id!r}", "id")
    try:
        entry = store.add_entry(book_id, WorldBookEntry.model_validate(body.model_dump()))
    except InputError as exc:
        if exc.field == "id":
            raise conflict(str(exc), "id") from exc
        raise
    return EntryResponse(entry=entry)


@router.post(
    "/{book_id}/entries/batch",
    response_model=EntriesResponse,
    status_code=status.HTTP_201_CREATED,
    dependencies=[WriteAuth],
    responses={**_WRITE, **_CONFLICT},
    summary="Add entries in one transaction",
)
def batch_create_entries(
    book_id: BookIdPath, body: BatchEntriesIn, store: StoreDep
) -> EntriesResponse:
    """Append every entry or none: a bad one is a 422 naming it, a taken id a 409."""
    entries = store.list_entries(book_id)
    if entries is None:
        raise not_found("world book", book_id, "book_id")
    taken = {e.id for e in entries} & {e.id for e in body.entries if e.id}
    if taken:
        raise conflict(
            f"entry id(s) already exist in world book {book_id!r}: {', '.join(sorted(taken))}",
            "entries",
        )
    created = store.batch_add_entries(
        book_id, [WorldBookEntry.model_validate(e.model_dump()) for e in body.entries]
    )
    return EntriesResponse(count=len(created), entries=created)


@router.put(
    "/{book_id}/entries/{entry_id}",
    response_model=EntryResponse,
    dependencies=[WriteAuth],
    responses=_WRITE,
    summary="Update an entry",
)
def update_entry(
    book_id: BookIdPath, entry_id: EntryIdPath, body: EntryIn, store: StoreDep
) -> EntryResponse:
    """Change the fields present in the body (any entry field); the rest keep their value."""
    changes = body.model_dump(exclude_unset=True)
    if not changes:
        raise InputError("no fields to update", field="body")
    entry = store.update_entry(book_id, entry_id, changes)
    if entry is None:
        if store.get(book_id) is None:
            raise not_found("world book", book_id, "book_id")
        raise not_found("entry", entry_id, "entry_id")
    return EntryResponse(entry=entry)


@router.delete(
    "/{book_id}/entries/{entry_id}",
    response_model=SuccessResponse,
    dependencies=[WriteAuth],
    responses=_WRITE,
    summary="Delete an entry",
)
def delete_entry(book_id: BookIdPath, entry_id: EntryIdPath, store: StoreDep) -> SuccessResponse:
    """Delete one entry."""
    if not store.delete_entry(book_id, entry_id):
        if store.get(book_id) is None:
            raise not_found("world book", book_id, "book_id")
        raise not_found("entry", entry_id, "entry_id")
    return SuccessResponse()


# ---------------------------------------------------------------------------------- ai-generate


@router.post(
    "/{book_id}/ai-generate",
    response_model=AiGenerateResponse,
    dependencies=[WriteAuth],
    responses={**_WRITE, **_MODEL},
    summary="Ask the chat model for entries (saved only with save: true)",
)
def ai_generate(
    book_id: BookIdPath, body: AiGenerateIn, store: StoreDep, state: StateDep
) -> AiGenerateResponse:
    """Generate entries with the configured chat model and return them for review.

    The reply must be JSON with an ``entries`` list; each entry is validated as a
    ``WorldBookEntry``. Invalid ones are listed in ``rejected``; when none is valid the answer is
    502 and nothing is saved. With ``save: true`` the valid entries are appended in one batch.
    """
    book = _book_or_404(store, book_id)
    model = state.model()
    messages = build_generation_messages(book, topic=body.topic, count=body.count)
    try:
        result = model.complete(messages, json_mode=True)
    except LLMTimeoutError as exc:
        raise ApiError(504, f"chat model timed out: {exc}") from exc
    except LLMError as exc:
        raise ApiError(502, f"chat model failed: {exc}") from exc
    try:
        generated = parse_generated_entries(result.text, limit=body.count)
    except GenerationReplyError as exc:
        log.warning("ai-generate for %r: %s", book_id, exc)
        raise ApiError(502, str(exc)) from exc
    if not generated.entries:
        reasons = "; ".join(generated.rejected[:5]) or "the entries list is empty"
        raise ApiError(502, f"model returned no valid entries: {reasons}")
    entries = generated.entries
    if body.save:
        entries = store.batch_add_entries(book_id, entries)
    return AiGenerateResponse(
        count=len(entries),
        entries=entries,
        saved=body.save,
        rejected=generated.rejected,
        model=result.model or getattr(model, "name", ""),
    )
