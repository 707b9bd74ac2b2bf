"""Stage 2, before_turn: world-book recall, memories, the card's greeting and the prompt; and the
LLM messages (history with depth inserts, post-history instructions)."""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import datetime
from functools import cache
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy import and_, bindparam, select
from sqlmodel import Session

from nekoflow.channels import ChatRequest
from nekoflow.characters.card import CardData
from nekoflow.characters.greetings import greeting_index, greeting_text, write_greeting
from nekoflow.macros import MacroContext
from nekoflow.memory.embeddings import configured_embedder, query_vector
from nekoflow.memory.history import load_history_rows
from nekoflow.memory.retrieve import PromptMemories, prompt_memories
from nekoflow.memory.settings import get_memory_settings
from nekoflow.memory.store import touch
from nekoflow.memory.window import line_text, window
from nekoflow.proactive.decide import greeting_to_deliver
from nekoflow.proactive.store import open_reminder_notes
from nekoflow.proactive.turns import instruction
from nekoflow.review.models import RELATIONSHIP_DIMENSIONS
from nekoflow.storage import read_session
from nekoflow.storage.dialogue import Role
from nekoflow.storage.fastsql import Bind, FastStatement, detached, dialect_name
from nekoflow.storage.memory import ensure_memory_index
from nekoflow.storage.turns import Relationship
from nekoflow.tokens import estimate_tokens
from nekoflow.turns.books import BookCache, Versions, versions_column, versions_key
from nekoflow.turns.characters import initial_relationship
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.errors import TurnFailed
from nekoflow.turns.lines import proactive_marker, request_of, turn_user_text
from nekoflow.turns.models import (
    BeforeTurnResult,
    DispatchResult,
    DroppedLore,
    InjectedEntry,
)
from nekoflow.turns.prompting import (
    assemble_prompt,
    lore_for_turn,
    place_depth_inserts,
)
from nekoflow.turns.stages.common import (
    StageTurn,
    history_messages,
    load_stage_turn,
    running_turn,
    save_result,
)
from nekoflow.worldbook import RecallOutcome, WorldBookRecallContext, recall
from nekoflow.worldbook.placement import DepthInsert

log = logging.getLogger(__name__)

_book_caches: dict[int, BookCache] = {}


_ROLE_TABLE: Any = Role.__table__  # type: ignore[attr-defined]
_REL_TABLE: Any = Relationship.__table__  # type: ignore[attr-defined]


@cache
def _role_and_relationship_statement(dialect: str) -> FastStatement:
    """The character, its relationship with the scope and the world books' revisions, in one
    statement (built once per dialect)."""
    return FastStatement(
        select(
            *_ROLE_TABLE.c,
            _REL_TABLE.c.role_id.label("rel_role_id"),
            *(_REL_TABLE.c[d] for d in RELATIONSHIP_DIMENSIONS),
            versions_column(dialect).label("book_versions"),
        )
        .select_from(
            _ROLE_TABLE.outerjoin(
                _REL_TABLE,
                and_(
                    _REL_TABLE.c.role_id == _ROLE_TABLE.c.id,
                    _REL_TABLE.c.scope_id == bindparam("p_scope"),
                ),
            )
        )
        .where(_ROLE_TABLE.c.id == bindparam("p_role"))
    )


def _role_and_relationship(
    s: Session, role_id: int, scope_id: str
) -> tuple[Role | None, dict[str, int], Versions | None]:
    """The character (detached), its relationship with the scope (its starting values when
    the scope has none yet) and the world books' revisions (None when there is no character)."""
    stmt = _role_and_relationship_statement(dialect_name(s))
    row = stmt.first(s, {"p_role": role_id, "p_scope": scope_id})
    if row is None:
        return None, {}, None
    n = len(_ROLE_TABLE.c)
    role = detached(Role, row[:n])
    versions = versions_key(row[-1])
    if row[n] is None:  # no relationship with this scope yet
        return role, initial_relationship(role), versions
    return role, dict(zip(RELATIONSHIP_DIMENSIONS, row[n + 1 : -1], strict=True)), versions


def _history_rows(deps: TurnDeps, s: Bind, d: DispatchResult, turn_id: str) -> list[Any]:
    """The newest ``history_limit`` lines of the active path, this turn's own lines left out."""
    rows = load_history_rows(s, d.save_id, limit=deps.settings.history_limit)
    return [r for r in rows if getattr(r, "turn_id", None) != turn_id]


def _window_budget(prompt: Any, user: str) -> int:
    """Tokens left for the history window once the prompt and the message are counted."""
    ms = get_memory_settings()
    inserts = [getattr(i, "content", "") for i in prompt.depth_inserts]
    fixed = sum(estimate_tokens(t) for t in (prompt.system, user, prompt.post_history, *inserts))
    return max(ms.context_tokens - fixed, ms.min_window_tokens)


def user_context(rows: list[Any]) -> list[str]:
    """The recent user lines that may add low-weight terms to memory retrieval (the
    character's own lines never drive it)."""
    return [line_text(r) for r in rows[-6:] if getattr(r, "attribute", None) == "user"][-2:]


def window_start(rows: list[Any], user: str, ms: Any) -> int | None:
    """The first line id the recent window will likely show (its rounds are not repeated as
    memories): the window sized as if the memory budgets were full."""
    fixed = estimate_tokens(user) + ms.prompt_tokens + ms.summary_tokens + 1000
    kept = window(rows, max(ms.context_tokens - fixed, ms.min_window_tokens), estimate_tokens)
    return kept[0].id if kept else None


def books_for(deps: TurnDeps) -> BookCache:
    """The process's world-book cache for this engine."""
    key = id(deps.engine)
    if key not in _book_caches:
        _book_caches[key] = BookCache(deps.engine)
    return _book_caches[key]


class PromptSettings(BaseSettings):
    """Prompt-assembly settings (``NEKOFLOW_PROMPT_EXAMPLE_CHARS``, ``NEKOFLOW_MACRO_TIMEZONE``,
    ``NEKOFLOW_UNKNOWN_MACROS``)."""

    model_config = SettingsConfigDict(env_prefix="NEKOFLOW_", env_file=None, extra="ignore")

    #: Characters of the card's example dialogues (``mes_example``) kept in the prompt.
    prompt_example_chars: int = Field(default=2000, ge=0)
    #: IANA time zone of the time macros (``{{time}}``, ``{{date}}``, ``{{weekday}}``,
    #: ``{{isotime}}`` …), e.g. ``Asia/Shanghai``.
    macro_timezone: str = "UTC"
    #: Macros nekoflow does not know (an extension's, e.g. MVU's
    #: ``{{format_message_variable::…}}``): "keep" them as written (SillyTavern without the
    #: extension) or "strip" them.
    unknown_macros: Literal["keep", "strip"] = "keep"

    @field_validator("macro_timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r} (e.g. Asia/Shanghai)") from None
        return value


@cache
def prompt_settings() -> PromptSettings:
    """The process's prompt settings, read once from the environment."""
    return PromptSettings()


def _card(role: Role) -> CardData | None:
    return CardData.model_validate(role.card) if role.card else None


def _macros(
    turn: StageTurn, d: DispatchResult, req: ChatRequest, card: CardData | None
) -> MacroContext:
    """What this turn's macros render from: names, its message time (never the wall clock, so
    a retry renders the same), seeds keyed on the turn id and the conversation."""
    user = (req.sender.display_name if req.sender else "") or d.display_name or "用户"
    char = (card.nickname.strip() if card is not None else "") or d.role_name
    return MacroContext(
        char=char,
        user=user,
        now=d.sent_at or turn.run.created_at,
        seed=turn.run.turn_id,
        chat_seed=str(d.save_id),
        idle_seconds=d.real_time.get("elapsed_seconds"),
        tz=ZoneInfo(prompt_settings().macro_timezone),
        strip_unknown=prompt_settings().unknown_macros == "strip",
        values={"input": turn_user_text(req, d)}
        | (
            {
                "description": card.description,
                "personality": card.personality,
                "scenario": card.scenario,
                "charPrompt": card.system_prompt,
                "charJailbreak": card.post_history_instructions,
                "charInstruction": card.post_history_instructions,
                "mesExamplesRaw": card.mes_example,
                "charVersion": card.character_version,
                "charDepthPrompt": card.depth_prompt.prompt if card.depth_prompt else "",
            }
            if card is not None
            else {}
        ),
    )


def _greet(
    deps: TurnDeps,
    d: DispatchResult,
    role: Role,
    card: CardData,
    req: ChatRequest,
    macros: MacroContext,
) -> None:
    """A new conversation starts with the card's greeting (``metadata.greeting`` picks one)."""
    index = greeting_index(req.metadata.get("greeting"), card)
    text = greeting_text(card, index, macros)
    with Session(deps.engine) as s:
        if write_greeting(s, save_id=d.save_id, role=role, text=text, now=d.sent_at):
            s.commit()


def before_turn(deps: TurnDeps, turn_id: str) -> BeforeTurnResult:
    """World-book recall (with cooldowns) and the system prompt: the turn's inputs are read and
    its result stored in one transaction."""
    with Session(deps.engine, expire_on_commit=False) as s:
        return _before_turn(deps, s, turn_id)


def _before_turn(deps: TurnDeps, s: Session, turn_id: str) -> BeforeTurnResult:
    turn = running_turn(deps, turn_id, "before_turn", s)
    stored = turn.result("before_turn", BeforeTurnResult)
    if stored is not None:
        s.rollback()
        return stored
    d = turn.required("dispatch", DispatchResult)
    req = request_of(turn.run)
    scene = req.metadata.get("scene") if isinstance(req.metadata.get("scene"), dict) else {}
    role, relationship, versions = _role_and_relationship(s, d.role_id, d.scope_id)
    if role is None:
        raise TurnFailed(f"character {d.role_id} was deleted")
    card = _card(role)
    macros = _macros(turn, d, req, card)
    proactive = proactive_marker(turn.run)
    if card is not None and d.real_time.get("elapsed_seconds") is None and not proactive:
        _greet(deps, d, role, card, req, macros)  # a new conversation
    text = turn_user_text(req, d)
    now = d.sent_at or turn.run.created_at
    ensure_memory_index(deps.engine)
    msettings = get_memory_settings()
    embedder = configured_embedder()
    qvec = query_vector(embedder, text, msettings.embeddings_query_timeout)
    rows = _history_rows(deps, s, d, turn_id)
    memories = prompt_memories(
        s,
        role_id=d.role_id,
        scope_id=d.scope_id,
        message=text,
        context=user_context(rows),
        now=now,
        settings=msettings,
        query_vector=qvec,
        embeddings_model=embedder.model if embedder is not None else None,
        below_line=window_start(rows, text, msettings),
    )
    books = books_for(deps).books(s, versions=versions)
    messages = history_messages(rows, d)
    recall_context = WorldBookRecallContext(
        latest_user_message=req.content,
        recent_messages=messages,
        scene=scene,
        character_id=d.role_name,
        target_id=d.user_id,
        scope_id=d.scope_id,
        turn_id=turn_id,
    )
    outcome = recall(
        recall_context,
        books,
        character_id=str(d.role_id),
        config=deps.recall_config,
        cooldowns=deps.cooldowns.snapshot(d.scope_id),
    )
    results = outcome.results
    # Only entries whose sections reach the prompt count as injected (and cool down).
    lore, reached_results = lore_for_turn(
        results, deps.recall_config.max_total_chars, positioned=card is not None
    )
    reached = {r.entry.id for r in reached_results}
    prompt = assemble_prompt(
        role_name=role.name,
        profile=role.profile_prompt,
        card=card,
        scene=scene,
        real_time_label=d.real_time.get("elapsed_label"),
        continuity=d.real_time.get("continuity_level"),
        relationship=relationship,
        memories=memories.block,
        lore=lore,
        macros=macros,
        example_chars=prompt_settings().prompt_example_chars,
    )
    kept = window(rows, _window_budget(prompt, text), estimate_tokens)
    greeting = None
    policy = deps.proactive.for_scope(turn.run.channel, d.scope_id)
    if card is not None and policy.greeting and not proactive:
        greeting = greeting_to_deliver(rows, d.save_id)
    result = BeforeTurnResult(
        system_prompt=prompt.system,
        depth_inserts=[asdict(i) for i in prompt.depth_inserts],
        post_history=prompt.post_history,
        examples=prompt.examples,
        injected=[
            InjectedEntry(
                id=r.entry.id,
                name=r.entry.name,
                sources=r.trigger_sources,
                keywords=r.matched_keywords,
                score=r.score,
            )
            for r in results
            if r.entry.id in reached
        ],
        dropped=dropped_lore(outcome, reached),
        memories=len(memories.used),
        memory_refs=[m.model_dump(exclude_none=True) for m in memories.used],
        history_lines=len(kept),
        history_beyond=len(kept) < len(rows) or len(rows) >= deps.settings.history_limit,
        relationship=relationship,
        greeting=greeting,
    )
    return save_result(
        deps,
        turn_id,
        "before_turn",
        result,
        also=lambda s: _mark_used(deps, s, memories, now),
        session=s,
    )


def dropped_lore(outcome: RecallOutcome, reached: set[str]) -> list[DroppedLore]:
    """What the turn records of the lore it left out: the recall's drops, then the recalled
    entries whose sections did not fit the prompt's lore characters (``sections``)."""
    out = [
        DroppedLore(
            id=d.entry_id,
            book_id=d.book_id,
            reason=d.reason,
            needed=d.needed,
            available=d.available,
            unit=d.unit,
            budget=d.budget,
        )
        for d in outcome.dropped
    ]
    for result, book in zip(outcome.results, outcome.books, strict=True):
        if result.entry.id not in reached:
            out.append(DroppedLore(id=result.entry.id, book_id=book.id, reason="sections"))
    return out


def _mark_used(deps: TurnDeps, s: Session, memories: PromptMemories, now: datetime) -> None:
    """The side effect of a kept before_turn result: its memories were used (one UPDATE)."""
    touch(s, [m.candidate for m in memories.chosen], now, deps.settings)


def llm_messages(deps: TurnDeps, turn_id: str) -> list[dict[str, str]]:
    """System prompt + the dialogue history and this turn's user message, with the depth
    inserts (lore at depth, the card's note) placed in them + the post-history instructions."""
    with read_session(deps.engine) as s:
        return turn_llm_messages(deps, load_stage_turn(deps, turn_id, s), s)


def turn_llm_messages(deps: TurnDeps, turn: StageTurn, s: Bind) -> list[dict[str, str]]:
    """:func:`llm_messages` for a loaded turn, reading its history in ``s``."""
    d = turn.required("dispatch", DispatchResult)
    b = turn.required("before_turn", BeforeTurnResult)
    rows = _history_rows(deps, s, d, turn.run.turn_id)
    if b.history_lines is not None:  # the token-sized window before_turn chose
        rows = rows[len(rows) - b.history_lines :] if b.history_lines else []
    history = history_messages(rows, d)
    marker = proactive_marker(turn.run)
    if marker is not None:  # the character reaches out: an instruction, no user's message
        kind = str(marker.get("kind") or "follow_up")
        text = instruction(
            kind,
            gap_seconds=d.real_time.get("elapsed_seconds"),
            note=marker.get("note"),
            # what it promised and has not done yet (a follow-up may mention it)
            promises=open_reminder_notes(s, d.scope_id) if kind == "follow_up" else None,
        )
        chat = [*history, {"role": "system", "content": text}]
    else:
        chat = [*history, {"role": "user", "content": turn_user_text(request_of(turn.run), d)}]
    inserts = [DepthInsert(**i) for i in b.depth_inserts]
    tail = [{"role": "system", "content": b.post_history}] if b.post_history else []
    return [
        {"role": "system", "content": b.system_prompt},
        *place_depth_inserts(chat, inserts),
        *tail,
    ]
