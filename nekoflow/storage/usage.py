"""The usage ledger: one row per paid model call that a turn, a review or a re-review kept."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from sqlalchemy import Boolean, Column, Index, UniqueConstraint, text
from sqlmodel import Field, SQLModel

from nekoflow.storage.dialogue import UTCDateTime, utcnow


class LLMUsage(SQLModel, table=True):
    """Tokens the LLM server reported for one call, with what the call was for."""

    __tablename__: ClassVar[str] = "llm_usage"  # type: ignore[misc]
    __table_args__ = (
        UniqueConstraint("turn_id", "kind", "n", name="uq_llm_usage_turn_kind_n"),
        Index("ix_llm_usage_day_scope", "day", "scope_id"),
        Index("ix_llm_usage_day_user", "day", "user_id"),
        Index("ix_llm_usage_day_channel", "day", "channel"),
        Index("ix_llm_usage_day_character", "day", "character"),
    )

    id: int | None = Field(default=None, primary_key=True)
    #: UTC day, ``YYYY-MM-DD`` (quotas are per day).
    day: str = Field(max_length=10)
    #: ``reply`` (the turn's answer), ``review`` (LLM review), ``rereview``, ``summary``…
    kind: str = Field(max_length=16)
    #: The turn (or re-review job item) that paid for it; ``n`` numbers several calls of one kind.
    turn_id: str | None = Field(default=None, max_length=64)
    n: int = 0
    channel: str = Field(default="", max_length=64)
    scope_id: str = Field(default="", max_length=512)
    user_id: str = Field(default="", max_length=200)
    character: str = Field(default="", max_length=128)
    model: str = Field(default="", max_length=200)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: The server reported no usage (a stream without it): the counts are nekoflow's estimate.
    estimated: bool = Field(
        default=False, sa_column=Column(Boolean(), nullable=False, server_default=text("false"))
    )
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
