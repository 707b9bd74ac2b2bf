"""SQL tables of world books and their entries (lists and dicts in JSON columns)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Column, Text
from sqlmodel import Field, SQLModel


class WorldBookRow(SQLModel, table=True):
    """One world book; ``position`` keeps the order of ``world_books.json``, ``revision``
    changes on every write to the book or its entries (it versions the matcher's index cache)."""

    __tablename__ = "worldbook_book"

    id: str = Field(primary_key=True)
    position: int = Field(default=0, index=True)
    name: str = ""
    description: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    character_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    enabled: bool = True
    created_at: str = ""
    updated_at: str = ""
    revision: str = ""
    rules: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=True))


class WorldBookEntryRow(SQLModel, table=True):
    """One entry of a world book (primary key: book id + entry id)."""

    __tablename__ = "worldbook_entry"

    book_id: str = Field(primary_key=True, foreign_key="worldbook_book.id", ondelete="CASCADE")
    id: str = Field(primary_key=True)
    position: int = 0
    name: str = ""
    keywords: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    content: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    enabled: bool = True
    priority: int = 0
    case_sensitive: bool = False
    match_mode: str = "any"
    trigger_sources: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    always_on: bool = False
    state_triggers: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    cooldown_turns: int = 0
    max_injections_per_session: int = 0
    tags: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    entry_type: str = "lore"
    weight: int = 0
    created_at: str = ""
    updated_at: str = ""
    rules: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=True))
