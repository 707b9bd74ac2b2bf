"""The statements of ``apply_deltas``: lock the running turn with its ledger row, and move the
relationship by the review's delta — built once per dialect; on PostgreSQL both in ONE
statement (:func:`lock_and_bump`).

The ORM's way (a no-op UPDATE, an INSERT flushed on its own, ``get(..., with_for_update)``, the
role read for a first turn, then an UPDATE or INSERT at flush) cost five round trips here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, exists, func, insert, literal_column, update
from sqlalchemy import select as sa_select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session

from nekoflow.characters.relationship import DEFAULT_RELATIONSHIP
from nekoflow.review.models import RELATIONSHIP_DIMENSIONS, RelationshipDelta, clamp_dimension
from nekoflow.storage.fastsql import FastStatement, dialect_name
from nekoflow.storage.turns import DeltaLedger, Relationship, TurnRun, TurnStatus

_RUN: Any = TurnRun.__table__  # type: ignore[attr-defined]
_LEDGER: Any = DeltaLedger.__table__  # type: ignore[attr-defined]
_REL: Any = Relationship.__table__  # type: ignore[attr-defined]


def _lock_statement() -> Any:
    """The no-op UPDATE that locks a still-running turn (``p_turn_id``, ``p_now``)."""
    return (
        update(_RUN)
        .where(_RUN.c.turn_id == bindparam("p_turn_id"), _RUN.c.status == TurnStatus.running.value)
        .values(updated_at=bindparam("p_now", type_=_RUN.c.updated_at.type))
    )


_LOCK = _lock_statement()
_LOCK_AND_LEDGER_PG = FastStatement(
    insert(_LEDGER)
    .from_select(
        ["turn_id", "applied_at"],
        sa_select(
            literal_column("locked.turn_id"), bindparam("p_now", type_=_LEDGER.c.applied_at.type)
        ).select_from(_lock_statement().returning(_RUN.c.turn_id).cte("locked")),
    )
    .returning(_LEDGER.c.turn_id)
)
"""PostgreSQL: lock the running turn and insert its ledger row in one statement."""
_LEDGER_INSERT = insert(_LEDGER).values(
    turn_id=bindparam("p_turn_id"), applied_at=bindparam("p_now", type_=_LEDGER.c.applied_at.type)
)
"""SQLite: the ledger row, after :data:`_LOCK` (both built once)."""


def lock_with_ledger(session: Session, turn_id: str, now: datetime) -> bool:
    """Lock the turn's row if it is still ``running`` and insert its ledger row; False (nothing
    written) when it is not running. Raises IntegrityError when the ledger row exists (the
    deltas were applied by a concurrent delivery)."""
    conn = session.connection()
    params = {"p_turn_id": turn_id, "p_now": now}
    if conn.dialect.name == "postgresql":
        return _LOCK_AND_LEDGER_PG.first(conn, params) is not None
    if not conn.execute(_LOCK, params).rowcount:
        return False
    conn.execute(_LEDGER_INSERT, params)
    return True


def _clamped(expr: Any, dialect: str) -> Any:
    """``expr`` clamped to 0–100 in SQL (as :func:`clamp_dimension`)."""
    if dialect == "postgresql":
        return func.least(func.greatest(expr, 0), 100)
    return func.min(func.max(expr, 0), 100)  # SQLite's scalar min/max of several arguments


def _bump_statement(dialect: str, when: Any = None) -> Any:
    """Upsert of a relationship: a new row starts at ``p_start_<dim>`` (already moved and
    clamped); an existing one moves by ``p_delta_<dim>``, clamped; ``turns`` counts up.
    ``when``: a condition the upsert runs under (nothing is written when it is false)."""
    ins: Any = (pg_insert if dialect == "postgresql" else sqlite_insert)(_REL)
    values = {
        "role_id": bindparam("p_role", type_=_REL.c.role_id.type),
        "scope_id": bindparam("p_scope", type_=_REL.c.scope_id.type),
        "turns": literal_column("1"),
        "updated_at": bindparam("p_now", type_=_REL.c.updated_at.type),
        **{
            dim: bindparam(f"p_start_{dim}", type_=_REL.c[dim].type)
            for dim in RELATIONSHIP_DIMENSIONS
        },
    }
    row = sa_select(*(v.label(k) for k, v in values.items()))
    if when is not None:
        row = row.where(when)
    elif dialect == "sqlite":  # SQLite parses ``INSERT … SELECT … ON CONFLICT`` only with a WHERE
        row = row.where(literal_column("1") == 1)
    stmt = ins.from_select(list(values), row)
    moved = {
        dim: _clamped(_REL.c[dim] + bindparam(f"p_delta_{dim}"), dialect)
        for dim in RELATIONSHIP_DIMENSIONS
    }
    return stmt.on_conflict_do_update(
        index_elements=["role_id", "scope_id"],
        set_={**moved, "turns": _REL.c.turns + 1, "updated_at": stmt.excluded.updated_at},
    ).returning(*(_REL.c[dim] for dim in RELATIONSHIP_DIMENSIONS), _REL.c.turns)


def _lock_and_bump_pg() -> FastStatement:
    """PostgreSQL: lock the running turn, insert its ledger row and — only when both did —
    move the relationship, in one statement returning the relationship's new row (no row:
    the turn was not running)."""
    locked = _lock_statement().returning(_RUN.c.turn_id).cte("locked")
    ledger = (
        insert(_LEDGER)
        .from_select(
            ["turn_id", "applied_at"],
            sa_select(locked.c.turn_id, bindparam("p_now", type_=_LEDGER.c.applied_at.type)),
        )
        .returning(_LEDGER.c.turn_id)
        .cte("ledger")
    )
    bumped = _bump_statement("postgresql", exists(sa_select(ledger.c.turn_id))).cte("bumped")
    return FastStatement(sa_select(*bumped.c))


_BUMP = {d: FastStatement(_bump_statement(d)) for d in ("postgresql", "sqlite")}
_LOCK_AND_BUMP_PG = _lock_and_bump_pg()


def _bump_params(
    role_id: int,
    scope_id: str,
    start: Mapping[str, Any],
    delta: RelationshipDelta | None,
    now: datetime,
) -> dict[str, Any]:
    moves = {dim: int(getattr(delta, dim, 0) or 0) for dim in RELATIONSHIP_DIMENSIONS}
    params: dict[str, Any] = {"p_role": role_id, "p_scope": scope_id, "p_now": now}
    for dim in RELATIONSHIP_DIMENSIONS:
        base = clamp_dimension(start.get(dim, DEFAULT_RELATIONSHIP[dim]))
        params[f"p_start_{dim}"] = clamp_dimension(base + moves[dim])
        params[f"p_delta_{dim}"] = moves[dim]
    return params


def _moved(row: Sequence[Any]) -> tuple[dict[str, int], int]:
    return dict(zip(RELATIONSHIP_DIMENSIONS, (int(v) for v in row[:-1]), strict=True)), int(row[-1])


def bump_relationship(
    session: Session,
    *,
    role_id: int,
    scope_id: str,
    start: Mapping[str, Any],
    delta: RelationshipDelta | None,
    now: datetime,
) -> tuple[dict[str, int], int]:
    """Move the (role, scope) relationship by ``delta`` and count the turn, in one statement
    that also locks the row; a scope's first turn starts from ``start`` (the values its
    prompt was built with). Returns the dimensions after the move and the turn count."""
    params = _bump_params(role_id, scope_id, start, delta, now)
    row = _BUMP[dialect_name(session)].first(session, params)
    assert row is not None  # an upsert returns its row
    return _moved(row)


def lock_and_bump(
    session: Session,
    turn_id: str,
    *,
    role_id: int,
    scope_id: str,
    start: Mapping[str, Any],
    delta: RelationshipDelta | None,
    now: datetime,
) -> tuple[dict[str, int], int] | None:
    """:func:`lock_with_ledger`, then — only when the turn was running — :func:`bump_relationship`:
    one statement on PostgreSQL, two on SQLite. None (nothing written) when the turn is not
    running; raises IntegrityError when its ledger row exists (applied by a concurrent
    delivery), the relationship then unmoved."""
    if dialect_name(session) != "postgresql":
        if not lock_with_ledger(session, turn_id, now):
            return None
        return bump_relationship(
            session, role_id=role_id, scope_id=scope_id, start=start, delta=delta, now=now
        )
    params = _bump_params(role_id, scope_id, start, delta, now) | {"p_turn_id": turn_id}
    row = _LOCK_AND_BUMP_PG.first(session, params)
    return None if row is None else _moved(row)
