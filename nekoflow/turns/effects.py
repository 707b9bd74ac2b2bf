"""The rows a review's output writes for one turn: memory records and a plot node.

Shared by the live ``apply_deltas`` stage and the bulk re-review's ``--apply``, so both write the
same memories (same fields, same expiry rule) and plot nodes. Builds rows; never touches a session.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from nekoflow.memory.fact_memory import FACT_IMPORTANCE, fact_content, fact_title
from nekoflow.review.models import ReviewOutput
from nekoflow.settings import Settings
from nekoflow.storage.turns import MemoryRecord, PlotNode


def memory_expiry(ttl: str, at: datetime, settings: Settings) -> datetime | None:
    """When a memory written at ``at`` expires: never for ``permanent``, else after its ttl."""
    if ttl == "permanent":
        return None
    long = ttl == "long"
    days = settings.memory_long_ttl_days if long else settings.memory_short_ttl_days
    return at + timedelta(days=days)


def memory_rows(
    out: ReviewOutput,
    *,
    role_id: int,
    scope_id: str,
    turn_id: str,
    at: datetime,
    settings: Settings,
) -> list[MemoryRecord]:
    """The memory records of ``out``, stamped ``at``: its memory items (none unless it says to
    write memory), then the facts the user stated (long-term, whatever the flag says)."""
    facts = [
        MemoryRecord(
            role_id=role_id,
            scope_id=scope_id,
            turn_id=turn_id,
            target="user",
            mem_type="long",
            title=fact_title(f.slot),
            content=fact_content(f.slot, f.value, f.sentence),
            importance=FACT_IMPORTANCE,
            ttl="long",
            expires_at=memory_expiry("long", at, settings),
            created_at=at,
        )
        for f in out.facts
    ]
    if not out.should_write_memory:
        return facts
    return [
        MemoryRecord(
            role_id=role_id,
            scope_id=scope_id,
            turn_id=turn_id,
            target=item.target,
            mem_type=item.mem_type,
            title=item.title,
            content=item.content,
            importance=item.importance,
            ttl=item.ttl,
            expires_at=memory_expiry(item.ttl, at, settings),
            created_at=at,
        )
        for item in out.memory_items
    ] + facts


def plot_rows(
    out: ReviewOutput, *, role_id: int, scope_id: str, turn_id: str, at: datetime
) -> list[PlotNode]:
    """The plot node of ``out`` (at most one), stamped ``at``."""
    plot = out.plot_update
    if plot is None or not plot.should_create_node:
        return []
    return [
        PlotNode(
            role_id=role_id,
            scope_id=scope_id,
            turn_id=turn_id,
            level=str(plot.level),
            title=plot.title,
            summary=plot.summary,
            created_at=at,
        )
    ]
