"""What the operator sees of proactive schedules (shared by ``nekoflow proactive`` and
``/api/proactive``): ids, kinds, times, states and reasons — the reminder's note only."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel
from sqlalchemy.engine import Engine

from nekoflow.errors import InputError
from nekoflow.proactive import store
from nekoflow.proactive.tables import OPEN_STATES, ProactiveSchedule, ScheduleState

_STATES = tuple(s.value for s in ScheduleState)


class ScheduleOut(BaseModel):
    """One proactive schedule as the operator sees it."""

    id: int
    kind: str
    channel: str
    scope_id: str
    due_at: datetime
    state: str
    n: int
    note: str | None = None
    turn_id: str | None = None
    reason: str | None = None


def _out(row: ProactiveSchedule) -> ScheduleOut:
    assert row.id is not None
    return ScheduleOut(
        id=row.id,
        kind=row.kind,
        channel=row.channel,
        scope_id=row.scope_id,
        due_at=row.due_at,
        state=row.state,
        n=row.n,
        note=row.note,
        turn_id=row.turn_id,
        reason=row.reason,
    )


def list_schedules(
    engine: Engine, *, scope: str | None = None, state: str | None = None, limit: int = 200
) -> list[ScheduleOut]:
    """Schedules soonest first: the open ones (due, firing), or those in ``state`` ("all":
    every state); an unknown state is an ``InputError`` naming the field."""
    if state is None:
        states: tuple[str, ...] | None = OPEN_STATES
    elif state == "all":
        states = None
    elif state in _STATES:
        states = (state,)
    else:
        raise InputError(
            f"unknown state {state!r} (expected all or one of: {', '.join(_STATES)})",
            field="state",
        )
    rows = store.list_schedules(engine, scope_id=scope, states=states, limit=limit)
    return [_out(r) for r in rows]


def cancel_schedule(engine: Engine, schedule_id: int) -> ScheduleOut:
    """Cancel a due schedule; ``LookupError`` for an unknown id, ``InputError`` (field
    ``schedule_id``) when it has already fired or ended."""
    row = store.get(engine, schedule_id)
    if row is None:
        raise LookupError(schedule_id)
    if not store.cancel(engine, schedule_id):
        raise InputError(
            f"schedule {schedule_id} is {row.state}: only a due schedule can be cancelled",
            field="schedule_id",
        )
    cancelled = store.get(engine, schedule_id)
    assert cancelled is not None
    return _out(cancelled)
