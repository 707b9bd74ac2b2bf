"""Delivery tables: the outbox (one row per rendered chunk of a turn's reply) and the platform
cursors (e.g. Telegram's ``getUpdates`` offset) that gateways persist so a restart neither skips
nor repeats inbound updates."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, BigInteger, Column, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from nekoflow.delivery.status import SETTLED, ChunkStatus, DeliveryStatus
from nekoflow.storage.dialogue import UTCDateTime, utcnow

__all__ = ["SETTLED", "ChunkStatus", "DeliveryStatus", "OutboxRow", "PlatformCursor"]


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
