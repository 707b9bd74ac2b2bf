"""Speech tables: a reply's voice parts (state, reason, usage) and the clip cache."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from sqlalchemy import Column, Index, LargeBinary, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from nekoflow.storage.dialogue import UTCDateTime, utcnow


class VoicePart(SQLModel, table=True):
    """One voiced line of a turn's reply: its synthesis state and what it cost."""

    __tablename__: ClassVar[str] = "voice_part"  # type: ignore[misc]
    __table_args__ = (
        UniqueConstraint("turn_id", "part", name="uq_voice_part_turn_part"),
        Index("ix_voice_part_created", "created_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    turn_id: str = Field(max_length=64, foreign_key="turn_run.turn_id", ondelete="CASCADE")
    part: int
    line_id: int | None = None
    provider: str = Field(default="", max_length=32)
    #: Format sent to the platform (``ogg_opus``, ``mp3``, ``wav``, ``silk``…).
    fmt: str = Field(default="", max_length=16)
    state: str = Field(default="awaiting", max_length=16)
    clip_key: str | None = Field(default=None, max_length=64)
    #: Why the part failed: our words and codes, never the text.
    reason: str | None = Field(default=None, sa_type=Text)
    #: Characters spoken, and whether the clip came from the cache (nothing synthesized).
    chars: int = 0
    cached: bool = False
    #: Milliseconds the provider call took (0 for a cache hit).
    synth_ms: int = 0
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
    updated_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )


class SpeechClip(SQLModel, table=True):
    """A synthesized clip, keyed by hash of (provider, voice, format, text): a repeated line
    costs nothing."""

    __tablename__: ClassVar[str] = "speech_clip"  # type: ignore[misc]
    __table_args__ = (Index("ix_speech_clip_last_used", "last_used_at"),)

    key: str = Field(primary_key=True, max_length=64)
    fmt: str = Field(max_length=16)
    audio: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    size: int = 0
    #: Duration in milliseconds when known (wav and silk; 0 otherwise).
    duration_ms: int = 0
    hits: int = 0
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
    last_used_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
