"""Inspecting and forgetting a scope's memories (what ``nekoflow memory`` and the API share).

Bad input raises :class:`nekoflow.errors.InputError` naming the field (``character``,
``scope``, ``memory_id``, ``limit``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlmodel import Session, col, select

from nekoflow.errors import InputError
from nekoflow.memory.rounds import hide_rounds
from nekoflow.memory.store import forget
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import MemoryRecord

__all__ = ["MemoryOut", "find_role", "forget_memory", "get_memory", "list_memories"]


class MemoryOut(BaseModel):
    """A memory as operators see it: its text, scores' inputs, use and history."""

    id: int
    role_id: int
    scope_id: str
    kind: str
    title: str
    content: str
    importance: float
    ttl: str
    mem_type: str
    target: str
    turn_id: str | None = None
    created_at: datetime
    updated_at: datetime | None = None
    last_accessed_at: datetime | None = None
    access_count: int = 0
    mentions: int = 1
    expires_at: datetime | None = None
    superseded_by: int | None = None
    span_from_line: int | None = None
    span_to_line: int | None = None

    @classmethod
    def of(cls, m: MemoryRecord) -> MemoryOut:
        """The view of a stored memory."""
        data: dict[str, Any] = m.model_dump(exclude={"terms", "fact_key", "embedding"})
        return cls.model_validate(data)


def find_role(s: Session, character: str | int | None) -> Role:
    """The character by id or exact name."""
    text = str(character).strip() if character is not None else ""
    if not text or "\x00" in text:
        raise InputError("character is required (a character id or name)", field="character")
    numeric = text.isascii() and text.isdigit() and len(text) < 10
    role = s.get(Role, int(text)) if numeric else None
    if role is None:
        role = s.exec(select(Role).where(Role.name == text).order_by(col(Role.id))).first()
    if role is None:
        raise InputError(f"character {text!r} does not exist", field="character")
    return role


def _scope(scope: str | None) -> str:
    if not scope or not scope.strip() or len(scope) > 512 or "\x00" in scope:
        raise InputError("scope is required: a scope id of at most 512 characters", field="scope")
    return scope


def list_memories(
    s: Session,
    character: str | int | None,
    scope: str | None,
    *,
    history: bool = False,
    limit: int = 100,
) -> list[MemoryOut]:
    """A scope's memories, newest first (superseded ones only with ``history``)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise InputError("limit must be an integer from 1 to 1000", field="limit")
    role = find_role(s, character)
    query = select(MemoryRecord).where(
        col(MemoryRecord.role_id) == role.id, col(MemoryRecord.scope_id) == _scope(scope)
    )
    if not history:
        query = query.where(col(MemoryRecord.superseded_by).is_(None))
    rows = s.exec(query.order_by(col(MemoryRecord.id).desc()).limit(limit)).all()
    return [MemoryOut.of(m) for m in rows]


def _memory(s: Session, memory_id: int) -> MemoryRecord:
    if isinstance(memory_id, bool) or not isinstance(memory_id, int) or memory_id < 1:
        raise InputError("memory_id must be a positive integer", field="memory_id")
    row = s.get(MemoryRecord, memory_id)
    if row is None:
        raise InputError(f"memory {memory_id} does not exist", field="memory_id")
    return row


def get_memory(s: Session, memory_id: int) -> MemoryOut:
    """One memory by id."""
    return MemoryOut.of(_memory(s, memory_id))


def forget_memory(s: Session, memory_id: int) -> int:
    """Delete a memory for good (with the history it replaced) and hide the past rounds of the
    turns that stated it from retrieval; commits. Rows deleted."""
    row = _memory(s, memory_id)
    stated = [
        m.turn_id
        for m in [row, *s.exec(select(MemoryRecord).where(MemoryRecord.superseded_by == row.id))]
        if m.turn_id
    ]
    hide_rounds(s, row.role_id, row.scope_id, stated)
    n = forget(s, [row])
    s.commit()
    return n
