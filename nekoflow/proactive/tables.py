"""The proactive schedule table: one row per message the character will start (a follow-up
after silence, a promised reminder), the system of record the sweep fires from."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar

from sqlalchemy import JSON, Column, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from nekoflow.storage.dialogue import UTCDateTime, utcnow


class ScheduleState(StrEnum):
    """Lifecycle of a schedule: due → firing → fired; or cancelled / dropped (with a reason)."""

    due = "due"
    #: Claimed by a sweep (until ``lease_until``: a sweep that died mid-fire is claimed again,
    #: and the turn's dedupe key makes the second fire find the first one's turn).
    firing = "firing"
    fired = "fired"
    #: By the user ("别叫我了"), the operator, or a newer silence replacing this one.
    cancelled = "cancelled"
    #: The sweep decided not to fire it (the user wrote, K unanswered, switched off, blocked).
    dropped = "dropped"


OPEN_STATES = (ScheduleState.due.value, ScheduleState.firing.value)


class ScheduleKind(StrEnum):
    """What a proactive turn is for."""

    follow_up = "follow_up"
    reminder = "reminder"


class ProactiveSchedule(SQLModel, table=True):
    """One proactive turn to start at ``due_at`` in a scope, exactly once."""

    __tablename__: ClassVar[str] = "proactive_schedule"  # type: ignore[misc]
    __table_args__ = (
        UniqueConstraint("key", name="uq_proactive_schedule_key"),
        Index("ix_proactive_schedule_state_due", "state", "due_at"),
        Index("ix_proactive_schedule_scope", "scope_id", "state"),
    )

    id: int | None = Field(default=None, primary_key=True)
    #: Stable identity: a second planning of the same follow-up or reminder inserts nothing.
    key: str = Field(max_length=700)
    kind: str = Field(max_length=16)
    channel: str = Field(max_length=64)
    scope_id: str = Field(max_length=512)
    character_id: str | None = Field(default=None, max_length=128)
    bot: str | None = Field(default=None, max_length=128)
    due_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    state: str = Field(default=ScheduleState.due.value, max_length=16)
    #: Follow-ups: which one in a row since the user last wrote (1 = the first).
    n: int = 1
    #: The user turn whose silence this follows (its ``seq`` tells whether the user wrote since).
    anchor_turn_id: str | None = Field(default=None, max_length=64)
    anchor_seq: int | None = None
    #: Reminders: the memory that holds the promise, and what was promised (shown to the model
    #: and the operator; never in task arguments, events or logs).
    memory_id: int | None = None
    note: str | None = Field(default=None, sa_type=Text)
    #: Where the message goes: the anchor message's request (its text removed) and context.
    request: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    context: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    turn_id: str | None = Field(default=None, max_length=64)
    reason: str | None = Field(default=None, max_length=500)
    lease_until: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
    updated_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
