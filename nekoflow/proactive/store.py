"""The proactive schedule in SQL: planning (idempotent on a key), claiming due rows exactly once
(one conditional UPDATE … RETURNING on SQLite and PostgreSQL), settling, listing, cancelling."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, exists, func, or_, update
from sqlalchemy import select as sa_select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.proactive.tables import (
    OPEN_STATES,
    ProactiveSchedule,
    ScheduleKind,
    ScheduleState,
)
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.fastsql import Bind
from nekoflow.storage.turns import TurnRun

PROACTIVE_KEY = "proactive:"
"""The dedupe-key prefix of proactive turns: ``proactive:<schedule id>`` (one turn per row)."""

_T: Any = ProactiveSchedule.__table__  # type: ignore[attr-defined]
_RUN: Any = TurnRun.__table__  # type: ignore[attr-defined]


def turn_key(schedule_id: int) -> str:
    """The dedupe key of the turn a schedule fires: a second fire finds the first's turn."""
    return f"{PROACTIVE_KEY}{schedule_id}"


def add_schedule(s: Bind, row: ProactiveSchedule) -> bool:
    """Insert ``row`` in ``s``'s transaction unless its key exists; True when inserted."""
    values = {c.name: getattr(row, c.name) for c in _T.columns if c.name != "id"}
    dialect = s.get_bind().dialect.name if isinstance(s, Session) else s.dialect.name
    mod: Any = postgresql if dialect == "postgresql" else sqlite
    stmt = (
        mod.insert(_T)
        .values(**values)
        .on_conflict_do_nothing(index_elements=["key"])
        .returning(_T.c.id)
    )
    return s.execute(stmt).first() is not None  # (rowcount is not reliable here)


def cancel_open(
    s: Bind, scope_id: str, *, kind: str | None = None, reason: str, now: datetime | None = None
) -> int:
    """Cancel the scope's due schedules (of ``kind``) in ``s``'s transaction; how many."""
    where = [_T.c.scope_id == scope_id, _T.c.state == ScheduleState.due.value]
    if kind is not None:
        where.append(_T.c.kind == kind)
    res = s.execute(
        update(_T)
        .where(*where)
        .values(state=ScheduleState.cancelled.value, reason=reason, updated_at=now or utcnow())
    )
    return int(res.rowcount)  # type: ignore[attr-defined]


def claim_due(
    engine: Engine, now: datetime, *, lease_seconds: float, limit: int = 100
) -> list[ProactiveSchedule]:
    """Claim up to ``limit`` rows due at ``now`` (and rows whose sweep died mid-fire) for this
    sweep, in one statement: concurrent sweeps never claim the same row (the state is in the
    UPDATE's own WHERE, re-checked on PostgreSQL after a concurrent update; SQLite serialises
    writers)."""
    claimable = or_(
        and_(_T.c.state == ScheduleState.due.value, _T.c.due_at <= now),
        and_(_T.c.state == ScheduleState.firing.value, _T.c.lease_until < now),
    )
    ids = sa_select(_T.c.id).where(claimable).order_by(_T.c.due_at).limit(limit)
    stmt = (
        update(_T)
        .where(_T.c.id.in_(ids.scalar_subquery()), claimable)
        .values(
            state=ScheduleState.firing.value,
            lease_until=now + timedelta(seconds=lease_seconds),
            updated_at=utcnow(),
        )
        .returning(*_T.columns)
    )
    with engine.begin() as conn:
        rows = conn.execute(stmt).all()
    return [ProactiveSchedule.model_validate(dict(r._mapping)) for r in rows]


def settle(engine: Engine, schedule_id: int, state: str, **values: Any) -> bool:
    """Move a claimed (firing) row to ``state`` with ``values``; False when it was not firing
    (cancelled meanwhile, or settled by another sweep after a lease ran out)."""
    stmt = (
        update(_T)
        .where(_T.c.id == schedule_id, _T.c.state == ScheduleState.firing.value)
        .values(state=state, lease_until=None, updated_at=utcnow(), **values)
    )
    with engine.begin() as conn:
        return bool(conn.execute(stmt).rowcount)


def user_wrote_since(engine: Engine, scope_id: str, seq: int) -> bool:
    """True when the scope has a user's turn after ``seq`` (not a proactive one)."""
    stmt = sa_select(
        exists().where(
            _RUN.c.scope_id == scope_id,
            _RUN.c.seq > seq,
            or_(_RUN.c.dedupe_key.is_(None), ~_RUN.c.dedupe_key.startswith(PROACTIVE_KEY)),
        )
    )
    with engine.connect() as conn:
        return bool(conn.execute(stmt).scalar())


def fired_since(engine: Engine, scope_id: str, since: datetime, now: datetime) -> int:
    """How many of the scope's schedules fired with a due time in [``since``, ``now``] (the
    bot-started messages a platform quota counts)."""
    stmt = (
        sa_select(func.count())
        .select_from(_T)
        .where(
            _T.c.scope_id == scope_id,
            _T.c.state == ScheduleState.fired.value,
            _T.c.due_at >= since,
            _T.c.due_at <= now,
        )
    )
    with engine.connect() as conn:
        return int(conn.execute(stmt).scalar() or 0)


def open_reminder_notes(s: Bind, scope_id: str, limit: int = 3) -> list[str]:
    """What the scope's due reminders promise, soonest first (read in ``s``)."""
    stmt = (
        sa_select(_T.c.note)
        .where(
            _T.c.scope_id == scope_id,
            _T.c.kind == ScheduleKind.reminder.value,
            _T.c.state == ScheduleState.due.value,
            _T.c.note.is_not(None),
        )
        .order_by(_T.c.due_at)
        .limit(limit)
    )
    return [str(n) for n in s.execute(stmt).scalars().all()]


def list_schedules(
    engine: Engine,
    *,
    scope_id: str | None = None,
    states: tuple[str, ...] | None = OPEN_STATES,
    limit: int = 200,
) -> list[ProactiveSchedule]:
    """Schedules (open ones by default), soonest first."""
    stmt = select(ProactiveSchedule)
    if scope_id is not None:
        stmt = stmt.where(ProactiveSchedule.scope_id == scope_id)
    if states:
        stmt = stmt.where(col(ProactiveSchedule.state).in_(states))
    stmt = stmt.order_by(col(ProactiveSchedule.due_at)).limit(limit)
    with Session(engine, expire_on_commit=False) as s:
        return list(s.exec(stmt).all())


def cancel(engine: Engine, schedule_id: int, reason: str = "cancelled by the operator") -> bool:
    """Cancel one due schedule; False when there is none (unknown, fired, already ended)."""
    stmt = (
        update(_T)
        .where(_T.c.id == schedule_id, _T.c.state == ScheduleState.due.value)
        .values(state=ScheduleState.cancelled.value, reason=reason[:500], updated_at=utcnow())
    )
    with engine.begin() as conn:
        return bool(conn.execute(stmt).rowcount)


def get(engine: Engine, schedule_id: int) -> ProactiveSchedule | None:
    """One schedule row, or None."""
    with Session(engine, expire_on_commit=False) as s:
        return s.get(ProactiveSchedule, schedule_id)


__all__ = [
    "PROACTIVE_KEY",
    "ScheduleKind",
    "add_schedule",
    "cancel",
    "cancel_open",
    "claim_due",
    "fired_since",
    "get",
    "list_schedules",
    "open_reminder_notes",
    "settle",
    "turn_key",
    "user_wrote_since",
]
