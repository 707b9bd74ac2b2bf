"""Turn tables: the run of each turn, its stored stage results, the apply-once ledger, and the
state a turn changes (relationships, memories, plot nodes, world-book suggestions).

``TurnRun`` is written before anything is published, so a turn exists even if the broker loses
its messages; ``TurnStage`` holds each stage's result keyed on (turn_id, stage), which makes a
redelivered stage return what it returned before; ``DeltaLedger`` has one row per applied turn,
so deltas are applied exactly once.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar

from sqlalchemy import JSON, Column, Index, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from nekoflow.storage.dialogue import UTCDateTime, utcnow

STAGES: tuple[str, ...] = (
    "dispatch",
    "before_turn",
    "llm_call",
    "memory_build",
    "review",
    "apply_deltas",
)
"""The six stages of a turn, in chain order."""


class TurnStatus(StrEnum):
    """Lifecycle of a turn: queued → running → done | failed | superseded; skipped never runs."""

    queued = "queued"
    running = "running"
    done = "done"
    failed = "failed"
    skipped = "skipped"
    #: ``on_busy = interrupt``: a newer message took over before the deltas were applied.
    superseded = "superseded"


FINISHED = frozenset(
    {
        TurnStatus.done.value,
        TurnStatus.failed.value,
        TurnStatus.skipped.value,
        TurnStatus.superseded.value,
    }
)


class TurnRun(SQLModel, table=True):
    """One turn: where it came from, its scope and place in the scope's order, and its outcome."""

    __tablename__: ClassVar[str] = "turn_run"  # type: ignore[misc]
    __table_args__ = (
        UniqueConstraint("scope_id", "seq", name="uq_turn_run_scope_seq"),
        UniqueConstraint("dedupe_key", name="uq_turn_run_dedupe_key"),
        # Not on updated_at (or anything else a stage's progress update changes): an update
        # that changes no indexed column can be a HOT update on PostgreSQL (no index entries,
        # no bloat), and a turn's row is updated about ten times. The sweeper finds the open
        # turns by status and reads their updated_at from the row; the runs page lists newest
        # first within a status.
        Index("ix_turn_run_status_created", "status", "created_at"),
    )

    turn_id: str = Field(primary_key=True, max_length=64)
    channel: str = Field(max_length=64)
    scope_id: str | None = Field(default=None, max_length=512, index=True)
    seq: int | None = None
    dedupe_key: str | None = Field(default=None, max_length=600)
    status: str = Field(default=TurnStatus.queued.value, max_length=16)
    stage: str | None = Field(default=None, max_length=32)
    reason: str | None = Field(default=None, sa_type=Text)
    character_id: str | None = Field(default=None, max_length=128)
    role_id: int | None = None
    save_id: int | None = None
    request: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    context: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    rendered: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON))
    llm_model: str | None = Field(default=None, max_length=200)
    llm_latency_ms: float | None = None
    llm_attempts: int = 0
    # The claim on the turn's LLM call: at most one call in flight per turn (renewed while the
    # call runs; a crashed worker's claim runs out after ``llm_lease_seconds``).
    llm_lease_until: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    llm_lease_owner: str | None = Field(default=None, max_length=64)
    #: ``on_busy = merge``: the turn does not start before this time (the debounce window).
    not_before: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    publishes: int = 0
    # Delivery of the reply (nekoflow.delivery): which bot answers, whether nekoflow sends the
    # reply itself (False: the adapter author does), and how far that got — None (nothing to
    # send), pending, sending, sent or failed, with the reason (ids and codes only).
    bot: str | None = Field(default=None, max_length=128)
    deliver: bool | None = None
    delivery_status: str | None = Field(default=None, max_length=16)
    delivery_reason: str | None = Field(default=None, sa_type=Text)
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
    updated_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
    started_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    finished_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class ScopeCounter(SQLModel, table=True):
    """The last ``seq`` handed out in a scope: one atomic upsert per enqueued turn, so
    concurrent enqueuers of one scope never collide on a sequence number."""

    __tablename__: ClassVar[str] = "scope_counter"  # type: ignore[misc]

    scope_id: str = Field(primary_key=True, max_length=512)
    last_seq: int = 0


class TurnStage(SQLModel, table=True):
    """The stored result of one stage of one turn (what a redelivered stage returns)."""

    __tablename__: ClassVar[str] = "turn_stage"  # type: ignore[misc]

    turn_id: str = Field(
        primary_key=True, max_length=64, foreign_key="turn_run.turn_id", ondelete="CASCADE"
    )
    stage: str = Field(primary_key=True, max_length=32)
    result: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )


class TurnMessage(SQLModel, table=True):
    """A user message merged into a queued turn of its scope (``on_busy = merge``): the turn
    answers its own message and every merged one; each keeps its own dialogue line and time."""

    __tablename__: ClassVar[str] = "turn_message"  # type: ignore[misc]
    __table_args__ = (UniqueConstraint("dedupe_key", name="uq_turn_message_dedupe_key"),)

    id: int | None = Field(default=None, primary_key=True)
    turn_id: str = Field(
        max_length=64, foreign_key="turn_run.turn_id", ondelete="CASCADE", index=True
    )
    dedupe_key: str | None = Field(default=None, max_length=600)
    request: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )


class TurnStageRun(SQLModel, table=True):
    """How many times a stage of a turn actually ran (redeliveries and retries included)."""

    __tablename__: ClassVar[str] = "turn_stage_run"  # type: ignore[misc]

    turn_id: str = Field(
        primary_key=True, max_length=64, foreign_key="turn_run.turn_id", ondelete="CASCADE"
    )
    stage: str = Field(primary_key=True, max_length=32)
    runs: int = 0
    last_run_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )


class DeltaLedger(SQLModel, table=True):
    """One row per turn whose deltas were applied: the primary key makes it exactly once."""

    __tablename__: ClassVar[str] = "delta_ledger"  # type: ignore[misc]

    turn_id: str = Field(
        primary_key=True, max_length=64, foreign_key="turn_run.turn_id", ondelete="CASCADE"
    )
    applied_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )


class Relationship(SQLModel, table=True):
    """A character's current relationship with one memory scope: six dimensions, 0–100."""

    __tablename__: ClassVar[str] = "relationship"  # type: ignore[misc]

    role_id: int = Field(primary_key=True, foreign_key="role.id", ondelete="CASCADE")
    scope_id: str = Field(primary_key=True, max_length=512)
    affection: int = 50
    trust: int = 50
    familiarity: int = 30
    dependency: int = 30
    security: int = 50
    jealousy: int = 0
    turns: int = 0
    updated_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )


class MemoryRecord(SQLModel, table=True):
    """A memory of a scope: a fact a turn's review wrote, or a summary of older dialogue."""

    __tablename__: ClassVar[str] = "memory_record"  # type: ignore[misc]
    __table_args__ = (Index("ix_memory_scope", "role_id", "scope_id", "expires_at"),)

    id: int | None = Field(default=None, primary_key=True)
    role_id: int = Field(foreign_key="role.id", ondelete="CASCADE")
    scope_id: str = Field(max_length=512)
    turn_id: str | None = Field(default=None, max_length=64, index=True)
    target: str = Field(default="user", max_length=16)
    mem_type: str = Field(default="short", max_length=16)
    title: str = Field(default="", sa_type=Text)
    content: str = Field(default="", sa_type=Text)
    importance: float = 0.0
    ttl: str = Field(default="short", max_length=16)
    expires_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
    # Long-term memory (nekoflow.memory.store); every column nullable or server-defaulted so an
    # older database gains them automatically.
    #: "fact" (written by a review) or "summary" (of an older span of the dialogue).
    kind: str = Field(
        default="fact", sa_column=Column(String(16), nullable=False, server_default="fact")
    )
    #: The lexical index terms (words + CJK bigrams, space separated, scope token first).
    terms: str | None = Field(default=None, sa_type=Text)
    #: What the memory is about (a detected slot like ``name`` or the normalised title): a new
    #: memory with the same key restates or contradicts this one.
    fact_key: str | None = Field(default=None, max_length=200)
    updated_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    last_accessed_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    access_count: int = Field(
        default=0, sa_column=Column(Integer, nullable=False, server_default="0")
    )
    #: How many turns stated this memory (1 + restatements).
    mentions: int = Field(default=1, sa_column=Column(Integer, nullable=False, server_default="1"))
    #: The memory that replaced this one (a contradiction): kept as history, never retrieved.
    superseded_by: int | None = None
    superseded_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    #: A summary's span on the dialogue path: first and last line id it covers.
    span_from_line: int | None = None
    span_to_line: int | None = None
    #: The embedding of title + content (optional embeddings endpoint): unit-length float32
    #: little-endian bytes (``nekoflow.memory.embeddings.pack``), and the model that made it.
    #: Both are cleared when the content changes; the ``memory`` queue fills them.
    embedding: bytes | None = Field(default=None, sa_column=Column(LargeBinary))
    embedding_model: str | None = Field(default=None, max_length=200)


class PlotNode(SQLModel, table=True):
    """A plot node created by a turn with a significant choice."""

    __tablename__: ClassVar[str] = "plot_node"  # type: ignore[misc]

    id: int | None = Field(default=None, primary_key=True)
    role_id: int = Field(foreign_key="role.id", ondelete="CASCADE")
    scope_id: str = Field(max_length=512, index=True)
    turn_id: str | None = Field(default=None, max_length=64, index=True)
    level: str = Field(max_length=16)
    title: str = Field(default="", sa_type=Text)
    summary: str = Field(default="", sa_type=Text)
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )


class WorldBookSuggestion(SQLModel, table=True):
    """A world-book change the review suggested, waiting for a human to accept or reject it."""

    __tablename__: ClassVar[str] = "world_book_suggestion"  # type: ignore[misc]

    id: int | None = Field(default=None, primary_key=True)
    role_id: int | None = Field(default=None, foreign_key="role.id", ondelete="SET NULL")
    scope_id: str = Field(max_length=512)
    turn_id: str | None = Field(default=None, max_length=64, index=True)
    reason: str = Field(default="", sa_type=Text)
    entry_title: str = Field(default="", sa_type=Text)
    entry_content: str = Field(default="", sa_type=Text)
    status: str = Field(default="pending", max_length=16)
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )


from nekoflow.storage import memory as _memory  # noqa: E402,F401  (memory_term_stat, index DDL)
