"""Re-review tables: ``ReviewJob`` (one bulk re-review), ``ReviewBatch`` (its units of work) and
``ReviewRecord`` (one reviewed historical turn per reviewer version).

``ReviewRecord``'s primary key (save_id, line_id, reviewer_version) — the turn key plus the
reviewer version — makes writes idempotent: records are inserted with ``ON CONFLICT DO NOTHING``,
so re-running a job writes nothing new. A batch's records and its ``done`` mark commit in one
transaction, so an interrupted job resumes at the first batch that is not done.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, Column, Index, Text
from sqlmodel import Field, SQLModel

from nekoflow.storage.dialogue import UTCDateTime, utcnow

__all__ = ["JobStatus", "ReviewBatch", "ReviewJob", "ReviewRecord"]


class JobStatus:
    """Job and batch states: pending → running → done | failed (a failed one can be resumed)."""

    pending = "pending"
    running = "running"
    done = "done"
    failed = "failed"


class ReviewJob(SQLModel, table=True):
    """One bulk re-review: its filters, mode, reviewer version, options and lifecycle."""

    __tablename__: ClassVar[str] = "review_job"  # type: ignore[misc]

    id: int | None = Field(default=None, primary_key=True)
    status: str = Field(default=JobStatus.running, max_length=16)
    mode: str = Field(default="rule", max_length=8)
    reviewer_version: str = Field(max_length=64)
    filters: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    batch_size: int = 2000
    dry_run: bool = False
    apply: bool = False
    batches: int = 0
    saves: int = 0
    estimated_turns: int = 0
    error: str | None = Field(default=None, sa_type=Text)
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
    finished_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    applied_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class ReviewBatch(SQLModel, table=True):
    """A unit of work of a job: a list of saves (whole conversations) and, once done, its tally."""

    __tablename__: ClassVar[str] = "review_batch"  # type: ignore[misc]

    job_id: int = Field(primary_key=True, foreign_key="review_job.id", ondelete="CASCADE")
    batch_no: int = Field(primary_key=True)
    save_ids: list[int] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    estimated_turns: int = 0
    status: str = Field(default=JobStatus.pending, max_length=16)
    turns: int = 0
    written: int = 0
    skipped: int = 0
    unanswered: int = 0
    memories: int = 0
    plots: int = 0
    fallbacks: int = 0
    # per save: role, scope, replayed end state, delta totals, counts (see SaveOutcome.summary)
    scopes: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    error: str | None = Field(default=None, sa_type=Text)
    done_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class ReviewRecord(SQLModel, table=True):
    """One historical turn reviewed by one reviewer version (turn key = save_id + line_id)."""

    __tablename__: ClassVar[str] = "review_record"  # type: ignore[misc]
    __table_args__ = (Index("ix_review_record_job", "job_id"),)

    save_id: int = Field(primary_key=True)
    line_id: int = Field(primary_key=True)
    reviewer_version: str = Field(primary_key=True, max_length=64)
    job_id: int
    role_id: int
    scope_id: str = Field(max_length=512)
    seq: int
    turn_id: str | None = Field(default=None, max_length=128)
    sent_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    source: str = Field(default="rule", max_length=8)
    skipped: bool = False
    fallback_reason: str | None = Field(default=None, sa_type=Text)
    affection: int = 0
    trust: int = 0
    familiarity: int = 0
    dependency: int = 0
    security: int = 0
    jealousy: int = 0
    has_delta: bool = True
    memory_value: float = 0.0
    memory_writes: int = 0
    plot_level: str | None = Field(default=None, max_length=16)
    output: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))

    @property
    def turn_key(self) -> str:
        """``{save_id}:{line_id}`` — the historical turn this record reviews."""
        return f"{self.save_id}:{self.line_id}"
