"""Delivery tables: the outbox (one row per rendered chunk of a turn's reply) and the platform
cursors (e.g. Telegram's ``getUpdates`` offset) that gateways persist so a restart neither skips
nor repeats inbound updates."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar

from sqlalchemy import JSON, BigInteger, Column, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from nekoflow.storage.dialogue import UTCDateTime, utcnow


class ChunkStatus(StrEnum):
    """Lifecycle of one outbox row.

    pending → sending → sent; ``handed_over`` waits for a gateway's confirmation; ``failed`` is
    permanent; ``unknown`` means the platform call may have gone through unconfirmed (a worker
    died while it was in flight, or it timed out or lost its connection after the request was
    sent) and the platform offers no idempotency, so the chunk is not sent again (it may or may
    not have arrived).
    """

    pending = "pending"
    sending = "sending"
    handed_over = "handed_over"
    sent = "sent"
    failed = "failed"
    unknown = "unknown"


SETTLED = frozenset({ChunkStatus.sent.value, ChunkStatus.failed.value, ChunkStatus.unknown.value})


class DeliveryStatus(StrEnum):
    """A turn's delivery, separate from its status: None on the TurnRun means nothing to send."""

    pending = "pending"
    sending = "sending"
    #: Every chunk is sent or with a gateway that confirms it later (order is then kept by the
    #: gateway's stream, so later replies may go).
    handed_over = "handed_over"
    sent = "sent"
    failed = "failed"
    #: Closed without sending: the turn ended with nothing to say (superseded by a newer
    #: message, skipped ``stale`` or ``quota_exceeded`` without a reply); the reason says which.
    not_sent = "not_sent"


class OutboxRow(SQLModel, table=True):
    """One chunk of a turn's reply on its way to a platform: exactly one row per (turn, index)."""

    __tablename__: ClassVar[str] = "delivery_outbox"  # type: ignore[misc]
    __table_args__ = (
        UniqueConstraint("turn_id", "idx", name="uq_delivery_outbox_turn_idx"),
        Index("ix_delivery_outbox_status", "status", "updated_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    turn_id: str = Field(max_length=64, foreign_key="turn_run.turn_id", ondelete="CASCADE")
    idx: int
    platform: str = Field(max_length=32)
    bot: str = Field(default="", max_length=128)
    chat_id: str = Field(max_length=128)
    destination: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    kind: str = Field(default="text", max_length=32)
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    status: str = Field(default=ChunkStatus.pending.value, max_length=16)
    attempts: int = 0
    lease_until: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    #: Earliest time a pending row may be sent again (a scheduled retry; None: at once).
    not_before: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    platform_message_id: str | None = Field(default=None, max_length=128)
    error: str | None = Field(default=None, sa_type=Text)
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
    updated_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
    sent_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class PlatformCursor(SQLModel, table=True):
    """Where a gateway is in a platform's update stream (Telegram: the next ``offset``)."""

    __tablename__: ClassVar[str] = "platform_cursor"  # type: ignore[misc]

    platform: str = Field(primary_key=True, max_length=32)
    bot: str = Field(primary_key=True, max_length=128)
    position: int = Field(default=0, sa_column=Column(BigInteger, nullable=False, default=0))
    updated_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
