"""Request and response models of the HTTP API (they make up its OpenAPI schema).

Request models reuse the world-book models and only add what storing needs: integers fit the SQL
columns (32-bit), and no string may hold a NUL character or a lone surrogate (PostgreSQL and UTF-8
cannot store them) — so such input is a 422 naming the field, never a database error.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Path
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from nekoflow.api.bodies import first_unsafe_value
from nekoflow.worldbook.models import (
    WorldBook,
    WorldBookEntry,
    WorldBookRecallConfig,
)

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

Int32 = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX)]
"""An integer that fits the SQL ``INTEGER`` columns of the store."""

Count32 = Annotated[int, Field(ge=0, le=INT32_MAX)]
"""A non-negative integer that fits the SQL ``INTEGER`` columns of the store."""

MAX_ID_CHARS = 200
ID_PATTERN = r"^[^\x00]+$"

BookIdPath = Annotated[
    str,
    Path(min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN, description="World book id"),
]
EntryIdPath = Annotated[
    str,
    Path(min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN, description="Entry id"),
]


def storable_problem(value: Any) -> str | None:
    """Why ``value`` (walked through dicts and lists) cannot be stored as text, or None."""
    if isinstance(value, str):
        if "\x00" in value:
            return "must not contain NUL (\\u0000) characters"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "must be valid Unicode (no lone surrogates)"
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            problem = storable_problem(key) or storable_problem(item)
            if problem:
                return problem
        return None
    if isinstance(value, list | tuple):
        for item in value:
            problem = storable_problem(item)
            if problem:
                return problem
    return None


def _check_storable(value: Any) -> Any:
    problem = storable_problem(value)
    if problem:
        raise ValueError(problem)
    return value


class EntryIn(WorldBookEntry):
    """An entry as sent by a client: every :class:`WorldBookEntry` field, storable values only.

    On create, a missing/empty ``id`` is generated. On update (PUT) only the fields present in
    the body change.
    """

    id: str = Field(default="", max_length=MAX_ID_CHARS)
    priority: Int32 = 0
    weight: Int32 = 0
    cooldown_turns: Count32 = 0
    max_injections_per_session: Count32 = 0

    @field_validator("*")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        return _check_storable(value)


class BookCreate(BaseModel):
    """A new world book (optionally with its first entries); the id is generated when empty."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default="", max_length=MAX_ID_CHARS)
    name: str = Field(min_length=1)
    description: str = ""
    character_ids: list[str] = Field(default_factory=list)
    enabled: bool = True
    entries: list[EntryIn] = Field(default_factory=list, max_length=5000)

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("id", "name", "description", "character_ids")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        return _check_storable(value)


class BookUpdate(BaseModel):
    """Changes to a world book's metadata; fields left out (or null) keep their value."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1)
    description: str | None = None
    character_ids: list[str] | None = None
    enabled: bool | None = None

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("*")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        return _check_storable(value)

    def changes(self) -> dict[str, Any]:
        """The fields to change (those given and not null)."""
        return self.model_dump(exclude_none=True)


class BatchEntriesIn(BaseModel):
    """Entries to append to a book in one transaction: all of them or none."""

    model_config = ConfigDict(extra="forbid")

    entries: list[EntryIn] = Field(min_length=1, max_length=5000)


class AiGenerateIn(BaseModel):
    """Ask the configured chat model for entries; they are saved only with ``save: true``."""

    model_config = ConfigDict(extra="forbid")

    topic: str = Field(default="", max_length=2000, description="Theme or direction to cover")
    count: int = Field(default=5, ge=1, le=30, description="How many entries to ask for")
    save: bool = Field(default=False, description="Append the valid entries to the book")


class RecentMessage(BaseModel):
    """One recent chat message for multi-source matching."""

    role: str
    content: str = ""


class TestMatchIn(BaseModel):
    """Test matching: simple mode (``message``, ``character_id``) or multi-source mode.

    Multi-source mode adds ``recent_messages`` (assistant ones feed ``assistant_recent``, all of
    them ``history``) and ``scene`` (for ``scene_state`` triggers). The other
    ``WorldBookRecallContext`` fields may be given too: ``assistant_recent_text`` and
    ``history_text`` replace the texts derived from ``recent_messages``; ``target_id``,
    ``scope_id`` and ``active_entry_ids`` are accepted for clients that send a whole context
    (they change nothing here). ``config`` overrides the recall limits. Nothing is stored and no
    cooldown is consulted or recorded.
    """

    __test__ = False  # not a pytest test class

    model_config = ConfigDict(extra="forbid")

    message: str = Field(max_length=100_000)
    character_id: str | None = None
    recent_messages: list[RecentMessage] = Field(default_factory=list, max_length=500)
    scene: dict[str, Any] = Field(default_factory=dict)
    assistant_recent_text: str = Field(default="", max_length=100_000)
    history_text: str = Field(default="", max_length=100_000)
    target_id: str = ""
    scope_id: str = ""
    active_entry_ids: list[str] = Field(default_factory=list)
    config: WorldBookRecallConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _finite_and_valid_unicode(cls, data: Any) -> Any:
        """NaN / ±infinity and lone surrogates anywhere are refused, naming the field."""
        problem = first_unsafe_value(data)
        if problem is not None:
            raise ValueError(problem)
        return data


# ---------------------------------------------------------------------------------- responses


class WorldBookOut(WorldBook):
    """A world book with its entries and their count."""

    entry_count: int = 0

    @classmethod
    def of(cls, book: WorldBook) -> WorldBookOut:
        """The response form of ``book``."""
        return cls(**book.model_dump(), entry_count=len(book.entries))


class SuccessResponse(BaseModel):
    """A write that returns nothing else (delete)."""

    success: bool = True


class BookResponse(SuccessResponse):
    """A created or updated world book."""

    world_book: WorldBookOut


class EntryResponse(SuccessResponse):
    """A created or updated entry."""

    entry: WorldBookEntry


class EntriesResponse(SuccessResponse):
    """Entries written in one batch."""

    count: int
    entries: list[WorldBookEntry]


class AiGenerateResponse(SuccessResponse):
    """Entries the model proposed (valid ones), whether they were saved, and what was rejected."""

    count: int
    entries: list[WorldBookEntry]
    saved: bool
    rejected: list[str] = Field(default_factory=list)
    model: str = ""


class TestMatchItem(BaseModel):
    """One hit of a test match, in the seed's shape."""

    __test__ = False

    world_book_name: str
    entry_name: str
    entry_id: str
    matched_keywords: list[str]
    trigger_sources: list[str]
    score: int
    content_preview: str


class TestMatchResponse(SuccessResponse):
    """The seed's test-match answer: ``{"success": true, "matches": [...]}``."""

    __test__ = False

    matches: list[TestMatchItem]


class HealthCheck(BaseModel):
    """One dependency's state."""

    ok: bool
    detail: str = ""
    #: ``?deep=1``: what to do when the check fails (names the setting or command).
    fix: str | None = None


class HealthResponse(BaseModel):
    """``status`` is ``ok`` when every check passed; ``failing`` names the ones that did not."""

    status: Literal["ok", "unavailable"]
    checks: dict[str, HealthCheck]
    failing: list[str] = Field(default_factory=list)


class ValidationItem(BaseModel):
    """One problem with the request: where (``loc``) and what (``msg``)."""

    loc: list[str | int]
    msg: str
    type: str
    input: Any = None


class ErrorResponse(BaseModel):
    """Every error: one readable line in ``error``; ``detail`` lists fields for a 422."""

    success: Literal[False] = False
    error: str
    detail: list[ValidationItem] | str | None = None


# ------------------------------------------------------------------------ turns and Web channel

MAX_TURN_ID_CHARS = 64
TurnIdPath = Annotated[
    str,
    Path(min_length=1, max_length=MAX_TURN_ID_CHARS, pattern=ID_PATTERN, description="Turn id"),
]

MAX_WAIT_SECONDS = 60.0
"""Longest a ``POST /api/web/chat`` may hold the request waiting for the reply."""

MAX_STREAM_SECONDS = 600.0
"""Longest a turn's event stream stays open."""


def known_channel(value: str) -> str:
    """``value`` as a registered channel name (aliases resolved); ValueError naming the known."""
    from nekoflow.channels.adapters import ADAPTERS, ALIASES

    name = value.strip().lower()
    name = ALIASES.get(name, name)
    if name not in ADAPTERS:
        raise ValueError(f"unknown channel {value!r} (known: {', '.join(sorted(ADAPTERS))})")
    return name


class TurnIn(BaseModel):
    """A raw platform event to run as a turn: ``channel`` picks the adapter that parses ``event``.

    ``event`` is what the platform sent (a OneBot event, a Telegram update, a Web-session message…).
    """

    model_config = ConfigDict(extra="forbid")

    channel: str = Field(max_length=64, description="qq, qqbot, feishu, telegram or web")
    event: dict[str, Any] = Field(description="The platform's raw event (JSON object)")

    @field_validator("channel")
    @classmethod
    def _known(cls, value: str) -> str:
        return known_channel(value)

    @field_validator("event")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        return _check_storable(value)


class TurnAccepted(BaseModel):
    """What submitting an event gave: a turn (202, ``queued``…) or ``skipped`` with the reason."""

    turn_id: str | None = None
    status: str
    reason: str | None = None
    channel: str = ""


class TurnStageOut(BaseModel):
    """A stage of the turn that finished, and when."""

    stage: str
    at: datetime


class TurnLlmOut(BaseModel):
    """The model call of a turn: model name, latency, attempts and token counts."""

    model: str | None = None
    latency_ms: float | None = None
    attempts: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class VoiceOut(BaseModel):
    """One voiced line of a turn's reply: its synthesis state and, when ready, its audio URL."""

    part: int
    state: str = Field(description="awaiting (being synthesized), ready or failed.")
    url: str | None = Field(
        default=None, description="The audio (GET, same auth as turn reads) when ready."
    )
    format: str = Field(description="ogg_opus, ogg, mp3, wav or silk.")
    reason: str | None = Field(default=None, description="Why it failed (never the text).")


class TurnOut(BaseModel):
    """A turn's state: status and current stage, finished stages, reason, reply and model call.

    ``rendered`` is the reply as the channel sends it (a failed turn holds its failure reply).
    ``character_id`` is the character the platform or config asked for (None: the default);
    ``role_id`` is the character that answers, once dispatch has chosen it.
    """

    turn_id: str
    channel: str
    scope_id: str | None = None
    character_id: str | None = None
    role_id: int | None = None
    status: str
    stage: str | None = None
    reason: str | None = None
    stages: list[TurnStageOut] = Field(default_factory=list)
    stage_runs: dict[str, int] = Field(
        default_factory=dict,
        description="How many times each stage actually ran (more than 1: a retry or a "
        "redelivered or re-published chain).",
    )
    publish_pending: bool = Field(
        default=False,
        description="Queued but not yet handed to the broker (waiting behind an earlier turn "
        "of its scope, or the broker was unreachable: the sweeper publishes it).",
    )
    rendered: list[dict[str, Any]] | None = None
    delivery_status: str | None = Field(
        default=None,
        description="Sending the reply to the platform, separate from the turn's status: null "
        "(nothing to send: Web, deliver=false), pending, sending, handed_over, sent, failed or "
        "not_sent (the turn ended with nothing to say: superseded, stale, quota_exceeded).",
    )
    delivery_reason: str | None = Field(
        default=None, description="Why delivery failed (codes, never message text)."
    )
    voice: list[VoiceOut] = Field(
        default_factory=list,
        description="The reply's voice parts when speech is on (NEKOFLOW_SPEECH_ENABLED): "
        "synthesized after the turn finished, each with its audio URL once ready.",
    )
    llm: TurnLlmOut = Field(default_factory=TurnLlmOut)
    injected: list[dict[str, str]] = Field(
        default_factory=list,
        description="World-book entries injected into the prompt ({id, name}; never content).",
    )
    dropped: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Matched world-book entries left out of the prompt: {id, book_id, reason, "
        "needed, available, unit, budget} (reason: over_budget, max_entries, cooldown, delay, "
        "probability, group_lost, session_cap, blank, or sections).",
    )
    memories: int = Field(default=0, description="How many memories went into the prompt.")
    memory_refs: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The memories and summaries in the prompt: {id, kind, score, relevance, "
        "importance, recency} (ids and scores, never text).",
    )
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None


class WebChatIn(BaseModel):
    """A message of a Web-channel session, and how long to wait for the reply.

    ``wait`` = 0 returns at once with the turn id (202); otherwise the request waits up to
    ``wait`` seconds (at most 60) and answers 200 with the reply when the turn finished in time.
    """

    model_config = ConfigDict(extra="forbid")

    session_id: str = Field(min_length=1, max_length=256, description="The chat session")
    message: str = Field(default="", max_length=100_000)
    user_id: str = Field(default="", max_length=256)
    display_name: str = Field(default="", max_length=256)
    message_id: str = Field(default="", max_length=256, description="Redelivery de-duplication")
    attachments: list[dict[str, Any]] = Field(default_factory=list, max_length=50)
    character_id: str | None = Field(default=None, max_length=128)
    character_mode: bool | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    wait: float = Field(default=0.0, ge=0.0, le=MAX_WAIT_SECONDS, description="Seconds to wait")

    @field_validator("session_id")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator(
        "session_id",
        "message",
        "user_id",
        "display_name",
        "message_id",
        "attachments",
        "character_id",
        "metadata",
    )
    @classmethod
    def _storable(cls, value: Any) -> Any:
        return _check_storable(value)

    def event(self) -> dict[str, Any]:
        """The Web adapter's raw event for this message."""
        return {"type": "message", **self.model_dump(exclude={"wait"}, exclude_none=True)}


class WebChatReply(BaseModel):
    """The turn of a Web message: its reply ``messages`` once finished (200), else pending (202).

    ``events_url`` streams the turn's progress; ``turn_url`` polls it.
    """

    turn_id: str | None = None
    status: str
    reason: str | None = None
    messages: list[dict[str, Any]] = Field(default_factory=list)
    turn_url: str | None = None
    events_url: str | None = None
