"""What went into a turn, for operators: the world-book entries and memories its prompt got
(ids and names only), the entries left out and why, and when each stage finished — read from
the stored stage results."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.storage.turns import STAGES, TurnStage


@dataclass
class TurnInputs:
    """A turn's prompt inputs and stage completion times (no text)."""

    injected: list[dict[str, str]] = field(default_factory=list)
    #: Matched world-book entries left out of the prompt: ``{id, book_id, reason, …}``.
    dropped: list[dict[str, Any]] = field(default_factory=list)
    memories: list[dict[str, str]] = field(default_factory=list)
    memory_count: int = 0
    #: The memories and summaries in the prompt: id, kind and score parts (never text).
    memory_refs: list[dict[str, Any]] = field(default_factory=list)
    stage_done_at: dict[str, datetime] = field(default_factory=dict)


def _memories(result: dict[str, Any]) -> tuple[list[dict[str, str]], int]:
    """Memories as ``{id, name}`` when the stage recorded them (``memory_refs`` or ``memories``
    as a list of ``{id, name|title}``, or ``memory_ids``), and how many there were."""
    raw = result.get("memory_refs", result.get("memories"))
    if isinstance(raw, list):
        items = [
            {"id": str(m.get("id", "")), "name": str(m.get("name") or m.get("title") or "")}
            for m in raw
            if isinstance(m, dict)
        ]
        return items, len(raw)
    ids = result.get("memory_ids")
    if isinstance(ids, list):
        return [{"id": str(i), "name": ""} for i in ids], len(ids)
    return [], int(raw) if isinstance(raw, int) else 0


def turn_inputs(engine: Engine, turn_ids: Iterable[str]) -> dict[str, TurnInputs]:
    """Each turn's :class:`TurnInputs` (empty for turns that did not reach before_turn)."""
    ids = list(turn_ids)
    out = {t: TurnInputs() for t in ids}
    if not ids:
        return out
    with Session(engine) as s:
        rows = s.exec(
            select(TurnStage.turn_id, TurnStage.stage, TurnStage.created_at).where(
                col(TurnStage.turn_id).in_(ids)
            )
        ).all()
        for turn_id, stage, at in rows:
            out[turn_id].stage_done_at[stage] = at
        prompts = s.exec(
            select(TurnStage.turn_id, TurnStage.result).where(
                col(TurnStage.turn_id).in_(ids), TurnStage.stage == "before_turn"
            )
        ).all()
    for turn_id, result in prompts:
        view = out[turn_id]
        for entry in (result or {}).get("injected") or []:
            view.injected.append(
                {"id": str(entry.get("id", "")), "name": str(entry.get("name", ""))}
            )
        view.dropped = [d for d in (result or {}).get("dropped") or [] if isinstance(d, dict)]
        view.memories, view.memory_count = _memories(result or {})
        refs = (result or {}).get("memory_refs")
        if isinstance(refs, list):
            view.memory_refs = [r for r in refs if isinstance(r, dict)]
    for view in out.values():
        order = {name: i for i, name in enumerate(STAGES)}
        view.stage_done_at = dict(
            sorted(view.stage_done_at.items(), key=lambda kv: order.get(kv[0], len(order)))
        )
    return out


def dropped_text(dropped: list[dict[str, Any]]) -> str:
    """One line of a turn's dropped lore: ``id reason (needed/available unit budget)`` each
    (the budget named once when it is the unit: ``343/0 tokens``, not ``343/0 tokens tokens``)."""
    parts = []
    for d in dropped:
        part = f"{d.get('id', '')} {d.get('reason', '')}"
        if d.get("needed") is not None:
            unit = str(d.get("unit") or "")
            figures = f"{d.get('needed')}/{d.get('available')} {unit}".strip()
            budget = str(d.get("budget") or "")
            part += f" ({' '.join(x for x in (figures, budget) if x and x != unit)})"
        parts.append(part)
    return "; ".join(parts)


def stage_timings(started_at: datetime | None, done_at: dict[str, datetime]) -> dict[str, float]:
    """Seconds each stage took: from the previous stage's completion (or the turn's start)."""
    timings: dict[str, float] = {}
    previous = started_at
    for stage, at in done_at.items():
        if previous is not None:
            timings[stage] = max((at - previous).total_seconds(), 0.0)
        previous = at
    return timings
