"""Stage results of a turn: reading the turn with them, storing one (with the run's progress
and the execution count), and counting the executions that store nothing.

Every stage starts with :func:`load_turn` (or :func:`load_turn_in` in its own transaction) and
ends with :func:`put_stage`; on PostgreSQL the latter is one statement.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import JSON, bindparam, func, insert, literal_column, text, union_all, update
from sqlalchemy import exists as sa_exists
from sqlalchemy import select as sa_select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from nekoflow.storage import read_session
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.fastsql import Bind, FastStatement, detached, dialect_name
from nekoflow.storage.turns import TurnRun, TurnStage, TurnStageRun

_RUN_TABLE: Any = TurnRun.__table__  # type: ignore[attr-defined]
_STAGE_TABLE: Any = TurnStage.__table__  # type: ignore[attr-defined]
_STAGE_RUN_TABLE: Any = TurnStageRun.__table__  # type: ignore[attr-defined]

ExtraRows = tuple[Any, Sequence[Mapping[str, Any]]]
"""A table and rows (column values) that belong with a stage's result: stored with it, only
when the result is (the usage a model call paid for)."""

ASYNC_COMMIT = text("SET LOCAL synchronous_commit TO OFF")
"""Issued first in a transaction whose loss in a database crash is harmless (it is redone)."""


def load_turn(engine: Engine, turn_id: str) -> tuple[TurnRun | None, dict[str, dict[str, Any]]]:
    """The TurnRun row and every stored stage result of the turn, in one statement and one
    row: every stage starts with this read, so it is one round trip and one transaction."""
    with read_session(engine) as s:
        return load_turn_in(s, turn_id)


def load_turn_in(session: Bind, turn_id: str) -> tuple[TurnRun | None, dict[str, dict[str, Any]]]:
    """:func:`load_turn` in the caller's transaction (a stage that writes reads its turn there,
    saving a transaction); the run row comes back detached."""
    stmt = _LOAD_PG if dialect_name(session) == "postgresql" else _LOAD_SQLITE
    row = stmt.first(session, {"p_turn_id": turn_id})
    if row is None:
        return None, {}
    run = run_from_row(row[:-1])
    STAGE_RUN.set(run)
    return run, dict(row[-1] or {})


RUN_COLUMNS: tuple[str, ...] = tuple(c.name for c in _RUN_TABLE.c)
"""The turn_run columns, in table order (the rows of :func:`run_from_row`)."""


def _load_statement(results: Any) -> Any:
    """The run row's columns, then its stored stage results as one JSON object (stage →
    result): one row, so the run's own JSON columns are decoded once, not once per stage."""
    by_stage = (
        sa_select(results).where(_STAGE_TABLE.c.turn_id == _RUN_TABLE.c.turn_id).scalar_subquery()
    )
    return sa_select(*_RUN_TABLE.c, by_stage.label("results")).where(
        _RUN_TABLE.c.turn_id == bindparam("p_turn_id")
    )


_LOAD_PG = FastStatement(
    _load_statement(func.json_object_agg(_STAGE_TABLE.c.stage, _STAGE_TABLE.c.result, type_=JSON))
)
_LOAD_SQLITE = FastStatement(
    _load_statement(
        func.json_group_object(_STAGE_TABLE.c.stage, func.json(_STAGE_TABLE.c.result), type_=JSON)
    )
)
"""The turn's read, built once per dialect (``json_object_agg`` / ``json_group_object``)."""


def run_from_row(values: Sequence[Any]) -> TurnRun:
    """A detached TurnRun from the turn_run columns of a Core row (in table order): stages
    read their turn this way."""
    return detached(TurnRun, values)


def get_stage(session: Bind, turn_id: str, stage: str) -> dict[str, Any] | None:
    """The stored result of ``stage`` for this turn, or None when it has not completed."""
    result = _STAGE_RESULT.scalar(session, {"p_turn_id": turn_id, "p_stage": stage})
    return None if result is None else dict(result)


_STAGE_RESULT = FastStatement(
    sa_select(_STAGE_TABLE.c.result).where(
        _STAGE_TABLE.c.turn_id == bindparam("p_turn_id"),
        _STAGE_TABLE.c.stage == bindparam("p_stage"),
    )
)


def put_stage(
    session: Bind,
    turn_id: str,
    stage: str,
    result: dict[str, Any],
    *,
    async_commit: bool = False,
    rows: ExtraRows | None = None,
    **run_fields: Any,
) -> bool:
    """Store a stage's result in the caller's transaction and record the progress on the
    TurnRun (``stage``, ``updated_at`` and any ``run_fields``). Returns False, writing nothing,
    when the stage already has a stored result (a concurrent delivery won: use theirs).
    ``async_commit``: on PostgreSQL, the transaction's commit will not wait for the WAL flush.
    ``rows``: a table's rows inserted too, only when the result is (in the same statement on
    PostgreSQL); a conflict on them raises IntegrityError.

    Plain Core statements (``INSERT … ON CONFLICT DO NOTHING`` and an ``UPDATE``; on PostgreSQL
    one statement built once per shape): this runs once per stage of every turn, and the ORM's
    unit of work costs more than the statements.
    """
    dialect = dialect_name(session)
    now = utcnow()
    table, extra = rows if rows is not None else (None, ())
    if dialect == "postgresql":
        fields = tuple(sorted(run_fields))
        params = {"p_turn_id": turn_id, "p_stage": stage, "p_result": result, "p_now": now}
        params |= {f"p_f_{f}": run_fields[f] for f in fields}
        columns = tuple(extra[0]) if extra else ()
        for i, row in enumerate(extra):
            params |= {f"p_r{i}_{c}": row[c] for c in columns}
        shape = (table, len(extra), columns) if extra else None
        stored = _put_stage_pg(fields, async_commit, shape).first(session, params)
        if stored is None:
            return False
        STAGE_COUNTED.set(True)
        return True
    ins: Any = sqlite_insert(_STAGE_TABLE)
    values = {"turn_id": turn_id, "stage": stage, "result": result, "created_at": now}
    inserted = session.execute(
        ins.values(**values)
        .on_conflict_do_nothing(index_elements=["turn_id", "stage"])
        .returning(_STAGE_TABLE.c.stage)  # rowcount is not reliable here (psycopg gives -1)
    ).first()
    if inserted is None:
        return False
    session.execute(
        update(_RUN_TABLE)
        .where(_RUN_TABLE.c.turn_id == turn_id)
        .values(stage=stage, updated_at=now, **run_fields)
    )
    # This execution of the stage is counted in the same transaction (no extra round trip on
    # the common path); executions that store nothing are counted by the runner.
    session.execute(_count_stmt(dialect, turn_id, stage, now))
    if extra:
        session.execute(insert(table), [dict(r) for r in extra])
    STAGE_COUNTED.set(True)
    return True


def _bind(table: Any, column: str, name: str | None = None) -> Any:
    """A bind parameter typed as ``table.column``, named ``p_<name or column>``: never a column's
    own name, which an UPDATE would take as one more column to set."""
    return bindparam(f"p_{name or column}", type_=table.c[column].type)


@lru_cache(maxsize=64)
def _put_stage_pg(
    fields: tuple[str, ...],
    async_commit: bool,
    extra: tuple[Any, int, tuple[str, ...]] | None = None,
) -> Any:
    """:func:`put_stage` on PostgreSQL as ONE statement, built once per shape (the TurnRun
    ``fields`` it sets; ``extra``: a table, a number of rows and their columns): the result's
    insert, and — only when it inserted — the run's progress, the execution count and the
    extra rows, as data-modifying CTEs (and, with ``async_commit``, ``SET LOCAL
    synchronous_commit = off`` as ``set_config``). Bind parameters: ``p_turn_id``,
    ``p_stage``, ``p_result``, ``p_now``, ``p_f_<field>`` for each of ``fields`` and
    ``p_r<i>_<column>`` for each extra row."""
    ins = (
        pg_insert(_STAGE_TABLE)
        .values(
            turn_id=_bind(_STAGE_TABLE, "turn_id"),
            stage=_bind(_STAGE_TABLE, "stage"),
            result=_bind(_STAGE_TABLE, "result"),
            created_at=_bind(_STAGE_TABLE, "created_at", "now"),
        )
        .on_conflict_do_nothing(index_elements=["turn_id", "stage"])
        .returning(_STAGE_TABLE.c.stage)
        .cte("stored")
    )
    stored = sa_exists(sa_select(ins.c.stage))
    progress = (
        update(_RUN_TABLE)
        .where(_RUN_TABLE.c.turn_id == _bind(_RUN_TABLE, "turn_id"), stored)
        .values(
            stage=_bind(_RUN_TABLE, "stage"),
            updated_at=_bind(_RUN_TABLE, "updated_at", "now"),
            **{f: _bind(_RUN_TABLE, f, f"f_{f}") for f in fields},
        )
        .returning(_RUN_TABLE.c.turn_id)
        .cte("progress")
    )
    row = sa_select(
        _bind(_STAGE_RUN_TABLE, "turn_id").label("turn_id"),
        _bind(_STAGE_RUN_TABLE, "stage").label("stage"),
        literal_column("1").label("runs"),
        _bind(_STAGE_RUN_TABLE, "last_run_at", "now").label("last_run_at"),
    ).where(stored)
    counted = (
        pg_insert(_STAGE_RUN_TABLE)
        .from_select(["turn_id", "stage", "runs", "last_run_at"], row)
        .on_conflict_do_update(
            index_elements=["turn_id", "stage"],
            set_={
                "runs": _STAGE_RUN_TABLE.c.runs + literal_column("1"),
                "last_run_at": _bind(_STAGE_RUN_TABLE, "last_run_at", "now"),
            },
        )
        .returning(_STAGE_RUN_TABLE.c.stage)
        .cte("counted")
    )
    what: list[Any] = [ins.c.stage]
    if async_commit:
        what.append(func.set_config("synchronous_commit", "off", True))
    statement = sa_select(*what).add_cte(progress).add_cte(counted)
    if extra is not None:
        table, n, columns = extra
        each = [
            sa_select(*(_bind(table, c, f"r{i}_{c}").label(c) for c in columns)).where(stored)
            for i in range(n)
        ]
        source = each[0] if n == 1 else union_all(*each)
        added = (
            insert(table)
            .from_select(list(columns), source)
            .returning(table.c[columns[0]])
            .cte("extra")
        )
        statement = statement.add_cte(added)
    return FastStatement(statement)


STAGE_COUNTED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "nekoflow_stage_counted", default=False
)
"""Set when ``put_stage`` counted the running stage execution (the runner then need not)."""

STAGE_RUN: contextvars.ContextVar[TurnRun | None] = contextvars.ContextVar(
    "nekoflow_stage_run", default=None
)
"""The run row as the running stage last read it (the task hooks use it instead of a read)."""


def _count_stmt(dialect: str, turn_id: str, stage: str, now: datetime) -> Any:
    ins: Any = (pg_insert if dialect == "postgresql" else sqlite_insert)(_STAGE_RUN_TABLE)
    return ins.values(turn_id=turn_id, stage=stage, runs=1, last_run_at=now).on_conflict_do_update(
        index_elements=["turn_id", "stage"],
        set_={"runs": _STAGE_RUN_TABLE.c.runs + 1, "last_run_at": now},
    )


def count_stage_run(engine: Engine, turn_id: str, stage: str) -> None:
    """Count one execution of ``stage`` that stored nothing (a redelivery finding a stored
    result, a stop, a retry, a failure) in its own small transaction.

    Bookkeeping only, so on PostgreSQL it commits without waiting for the WAL flush.
    """
    with Session(engine) as s:
        if engine.dialect.name == "postgresql":
            s.execute(ASYNC_COMMIT)
        try:
            s.execute(_count_stmt(engine.dialect.name, turn_id, stage, utcnow()))
        except IntegrityError:  # no such turn (a stray message): nothing to count
            s.rollback()
            return
        s.commit()


def stage_runs(engine: Engine, turn_ids: Iterable[str]) -> dict[str, dict[str, int]]:
    """``{turn_id: {stage: runs}}``: how many times each stage of each turn actually ran."""
    ids = list(turn_ids)
    out: dict[str, dict[str, int]] = {tid: {} for tid in ids}
    if not ids:
        return out
    with read_session(engine) as s:
        rows = s.exec(
            select(TurnStageRun.turn_id, TurnStageRun.stage, TurnStageRun.runs).where(
                col(TurnStageRun.turn_id).in_(ids)
            )
        ).all()
    for turn_id, stage, runs in rows:
        out[turn_id][stage] = runs
    return out
