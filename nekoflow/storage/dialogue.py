"""Dialogue tables (seed 002): ``Role`` (a character), ``Save`` (a thread), ``Line`` (the tree).

A save's lines form a tree through ``Line.parent_line_id``; regenerated or edited replies are
siblings. ``Save.last_message_id`` points at the leaf of the active branch, so moving it selects a
branch. ``Save.last_message_id`` → ``line.id`` and ``Line.save_id`` → ``save.id`` form a foreign-key
cycle; the save side is created with ``use_alter`` so ``create_all``/``drop_all`` work on
PostgreSQL (SQLite keeps it inline). Timestamps are stored and returned as timezone-aware UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydField
from sqlalchemy import JSON, Column, DateTime, ForeignKey, Index, Integer, Text, UniqueConstraint
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, SQLModel

__all__ = ["Line", "RelationshipState", "Role", "Save", "UTCDateTime", "utcnow"]


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp column that always comes back timezone-aware UTC (SQLite stores it naive).

    Naive datetimes written to it are taken to be UTC already.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class RelationshipState(BaseModel):
    """The six relationship dimensions of a character towards a user, each 0–100.

    Defaults (a stranger): affection 50, trust 50, familiarity 0, dependency 0, security 50,
    jealousy 0.
    """

    model_config = ConfigDict(extra="forbid")

    affection: int = PydField(default=50, ge=0, le=100)
    trust: int = PydField(default=50, ge=0, le=100)
    familiarity: int = PydField(default=0, ge=0, le=100)
    dependency: int = PydField(default=0, ge=0, le=100)
    security: int = PydField(default=50, ge=0, le=100)
    jealousy: int = PydField(default=0, ge=0, le=100)


def _default_relationship() -> dict[str, int]:
    return RelationshipState().model_dump()


class Role(SQLModel, table=True):
    """A character: its name, profile prompt, initial relationship state (JSON, 0–100 each) and,
    when imported, its character card."""

    __tablename__: ClassVar[str] = "role"  # type: ignore[misc]

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=200)
    profile_prompt: str = Field(default="", sa_type=Text)
    initial_relationship: dict[str, int] = Field(
        default_factory=_default_relationship, sa_column=Column(JSON, nullable=False)
    )
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
    #: The imported character card, every field kept (``nekoflow.characters.card.CardData`` as
    #: JSON); None for a character made with ``character add``.
    card: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))

    @classmethod
    def new(
        cls,
        name: str,
        *,
        profile_prompt: str = "",
        initial_relationship: RelationshipState | dict[str, Any] | None = None,
    ) -> Role:
        """A validated new role; a bad relationship value raises ``pydantic.ValidationError``."""
        state = RelationshipState.model_validate(initial_relationship or {})
        return cls(
            name=name, profile_prompt=profile_prompt, initial_relationship=state.model_dump()
        )

    @property
    def relationship_state(self) -> RelationshipState:
        """The stored initial relationship state, validated."""
        return RelationshipState.model_validate(self.initial_relationship)


class Save(SQLModel, table=True):
    """One conversation thread of one role in one memory scope; points at its active leaf."""

    __tablename__: ClassVar[str] = "save"  # type: ignore[misc]
    __table_args__ = (UniqueConstraint("role_id", "scope_id", name="uq_save_role_scope"),)

    id: int | None = Field(default=None, primary_key=True)
    role_id: int = Field(foreign_key="role.id", ondelete="CASCADE")
    scope_id: str = Field(max_length=512)
    last_message_id: int | None = Field(
        default=None,
        sa_column=Column(
            Integer,
            ForeignKey(
                "line.id", use_alter=True, name="fk_save_last_message_id", ondelete="SET NULL"
            ),
            nullable=True,
        ),
    )
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
    updated_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )


class Line(SQLModel, table=True):
    """台词: one node of a save's dialogue tree (every field of seed 002, plus time and turn)."""

    __tablename__: ClassVar[str] = "line"  # type: ignore[misc]
    # (save_id, turn_id) serves both "lines of a save" and the per-turn idempotency lookup.
    __table_args__ = (Index("ix_line_save_id_turn_id", "save_id", "turn_id"),)

    id: int | None = Field(default=None, primary_key=True)

    original_emotion: str | None = None
    predicted_emotion: str | None = None
    content: str = Field(sa_type=Text)
    tts_content: str | None = Field(default=None, sa_type=Text)
    action_content: str | None = Field(default=None, sa_type=Text)
    audio_file: str | None = None

    attribute: str = Field(max_length=16)  # assistant, user, system

    role_id: int | None = Field(default=None, foreign_key="role.id", ondelete="SET NULL")
    script_role_id: str | None = None
    display_name: str | None = None

    save_id: int = Field(foreign_key="save.id", ondelete="CASCADE")
    parent_line_id: int | None = Field(
        default=None, foreign_key="line.id", ondelete="CASCADE", index=True
    )

    turn_id: str | None = Field(default=None, max_length=128, index=True)
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False)
    )
