"""``/api/memories``: a character's long-term memories of a scope — list, show, forget.

Memories hold what users said, so every endpoint needs the bearer token. Bad input is a 422
naming the field (``character``, ``scope``, ``memory_id``, ``limit``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel
from sqlmodel import Session

from nekoflow.api.deps import StateDep, WriteAuth
from nekoflow.api.errors import not_found
from nekoflow.api.schemas import ErrorResponse
from nekoflow.memory.admin import MemoryOut, forget_memory, get_memory, list_memories
from nekoflow.storage.turns import MemoryRecord

router = APIRouter(prefix="/api/memories", tags=["memories"], dependencies=[WriteAuth])

_E = ErrorResponse
_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": _E, "description": "Missing or wrong bearer token"},
    404: {"model": _E, "description": "Unknown memory id"},
    503: {"model": _E, "description": "NEKOFLOW_API_TOKEN not configured"},
}
MemoryIdPath = Annotated[int, Path(ge=1, le=2**31 - 1, description="Memory id.")]


class MemoriesOut(BaseModel):
    """A scope's memories, newest first."""

    memories: list[MemoryOut]


class ForgetOut(BaseModel):
    """What forgetting deleted: the memory and the older facts it had replaced."""

    deleted: int


@router.get("", response_model=MemoriesOut, responses=_RESPONSES, summary="A scope's memories")
def list_route(
    state: StateDep,
    character: Annotated[str | None, Query(description="Character id or name.")] = None,
    scope: Annotated[str | None, Query(description="Scope id.")] = None,
    history: Annotated[bool, Query(description="Also superseded memories.")] = False,
    limit: Annotated[int, Query(ge=1, le=1000, description="At most this many.")] = 100,
) -> MemoriesOut:
    """A character's memories of one scope, newest first."""
    with Session(state.engine) as s:
        rows = list_memories(s, character, scope, history=history, limit=limit)
    return MemoriesOut(memories=rows)


def _exists(state: StateDep, memory_id: int) -> None:
    with Session(state.engine) as s:
        if s.get(MemoryRecord, memory_id) is None:
            raise not_found("memory", str(memory_id), "memory_id")


@router.get("/{memory_id}", response_model=MemoryOut, responses=_RESPONSES, summary="A memory")
def get_route(memory_id: MemoryIdPath, state: StateDep) -> MemoryOut:
    """One memory with its use and history fields."""
    _exists(state, memory_id)
    with Session(state.engine) as s:
        return get_memory(s, memory_id)


@router.delete(
    "/{memory_id}", response_model=ForgetOut, responses=_RESPONSES, summary="Forget a memory"
)
def delete_route(memory_id: MemoryIdPath, state: StateDep) -> ForgetOut:
    """Delete a memory for good (and the older facts it replaced)."""
    _exists(state, memory_id)
    with Session(state.engine) as s:
        return ForgetOut(deleted=forget_memory(s, memory_id))
