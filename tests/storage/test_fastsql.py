"""FastStatement: the same rows, values and errors as running the statement through SQLAlchemy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlmodel import Session

from nekoflow.storage.fastsql import FastStatement
from nekoflow.storage.turns import TurnRun, TurnStatus
from nekoflow.storage.usage import LLMUsage
from nekoflow.turns import stage_store
from tests.conftest import PG_URL

RUN = TurnRun.__table__  # type: ignore[attr-defined]


def _turn(engine: Engine, turn_id: str) -> None:
    with Session(engine) as s:
        s.add(
            TurnRun(
                turn_id=turn_id,
                channel="web",
                scope_id=turn_id,
                seq=1,
                status=TurnStatus.running,
                request={"content": "谢谢你陪我聊天", "metadata": {"n": [1, 2]}},
                llm_latency_ms=12.5,
                not_before=datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=8))),
            )
        )
        s.commit()


def test_rows_equal_sqlalchemys_for_json_times_and_floats(engine: Engine) -> None:
    _turn(engine, "t1")
    stmt = select(*RUN.c).where(RUN.c.turn_id == bindparam("p_id"))
    fast = FastStatement(stmt)
    with engine.connect() as conn:
        expected = tuple(conn.execute(stmt, {"p_id": "t1"}).one())
        got = tuple(fast.first(conn, {"p_id": "t1"}) or ())
        again = tuple(fast.first(conn, {"p_id": "t1"}) or ())  # compiled once, reused
        assert fast.first(conn, {"p_id": "nobody"}) is None
    assert got == expected == again
    row = dict(zip(RUN.c.keys(), got, strict=True))
    assert row["request"]["metadata"] == {"n": [1, 2]} and row["llm_latency_ms"] == 12.5
    assert row["not_before"] == datetime(2026, 1, 1, 19, 4, 5, tzinfo=UTC)


def test_writes_join_the_callers_transaction(engine: Engine) -> None:
    _turn(engine, "t2")
    stmt = (
        update(RUN)
        .where(RUN.c.turn_id == bindparam("p_id"))
        .values(reason=bindparam("p_reason"))
        .returning(RUN.c.reason)
    )
    fast = FastStatement(stmt)
    with Session(engine) as s:
        assert fast.rows(s.connection(), {"p_id": "t2", "p_reason": "x"}) == [("x",)]
        s.rollback()  # the update was in the session's transaction: gone
    with Session(engine) as s:
        assert s.get(TurnRun, "t2").reason is None  # type: ignore[union-attr]


def test_constant_in_lists_expand_once_and_a_session_is_a_bind(engine: Engine) -> None:
    for turn_id, status in [("a1", TurnStatus.done), ("a2", TurnStatus.queued)]:
        _turn(engine, turn_id)
        with Session(engine) as s:
            s.execute(update(RUN).where(RUN.c.turn_id == turn_id).values(status=status))
            s.commit()
    stmt = (
        select(RUN.c.turn_id)
        .where(RUN.c.turn_id.in_(["a1", "a2"]), RUN.c.status.not_in(["done", "failed"]))
        .order_by(RUN.c.turn_id)
    )
    fast = FastStatement(stmt)
    with Session(engine) as s:
        assert fast.rows(s, {}) == [("a2",)] == fast.rows(s, {})
        assert fast.scalar(s, {}) == "a2"
        assert FastStatement(stmt.where(RUN.c.turn_id == "zz")).scalar(s, {}) is None


@pytest.mark.parametrize(
    "db_url",
    [pytest.param("postgres", marks=pytest.mark.skipif(not PG_URL, reason="no PostgreSQL"))],
    indirect=True,
)
def test_an_in_list_given_per_call_is_refused(engine: Engine) -> None:
    """On PostgreSQL only: elsewhere the statement runs through SQLAlchemy, which expands it."""
    fast = FastStatement(select(RUN.c.turn_id).where(RUN.c.turn_id.in_(bindparam("p_ids"))))
    with engine.connect() as conn, pytest.raises(ValueError, match="p_ids"):
        fast.rows(conn, {"p_ids": ["a"]})


def test_dml_without_returning_returns_no_rows(engine: Engine) -> None:
    """SQLAlchemy compiles an implicit RETURNING of the key into a Core insert on PostgreSQL:
    a statement that declares no result columns still returns none; columns left out get
    their defaults."""
    usage = LLMUsage.__table__  # type: ignore[attr-defined]
    fast = FastStatement(
        insert(usage).values(
            day="2026-11-27",
            kind="reply",
            turn_id=bindparam("p_id"),
            n=1,
            created_at=datetime.now(UTC),
        )
    )
    with Session(engine) as s:
        assert fast.rows(s, {"p_id": "n1"}) == [] and fast.scalar(s, {"p_id": "n2"}) is None
        s.commit()
    with Session(engine) as s:
        rows = s.execute(select(usage.c.turn_id, usage.c.channel, usage.c.prompt_tokens)).all()
    # the columns it left out got their Python-side defaults, as through SQLAlchemy
    assert sorted(tuple(r) for r in rows) == [("n1", "", 0), ("n2", "", 0)]


def test_a_write_on_a_plain_connection_commits_with_it(engine: Engine) -> None:
    """Run on a Connection outside any transaction, the statement begins one (as SQLAlchemy's
    autobegin would): the connection's commit() keeps the write, close() without it drops it."""
    _turn(engine, "c1")
    fast = FastStatement(
        update(RUN).where(RUN.c.turn_id == bindparam("p_id")).values(reason=bindparam("p_r"))
    )
    with engine.connect() as conn:
        fast.rows(conn, {"p_id": "c1", "p_r": "kept"})
        conn.commit()
    with engine.connect() as conn:
        fast.rows(conn, {"p_id": "c1", "p_r": "dropped"})
    with Session(engine) as s:
        assert s.get(TurnRun, "c1").reason == "kept"  # type: ignore[union-attr]


def test_a_constraint_violation_is_sqlalchemys_integrity_error(engine: Engine) -> None:
    _turn(engine, "t3")
    fast = FastStatement(
        insert(RUN)
        .values(turn_id=bindparam("p_id"), channel="web", status="queued")
        .returning(RUN.c.turn_id)
    )
    with engine.connect() as conn, pytest.raises(IntegrityError):
        fast.rows(conn, {"p_id": "t3"})


def test_the_stage_read_returns_the_run_and_its_results(engine: Engine) -> None:
    _turn(engine, "t4")
    with Session(engine) as s:
        assert stage_store.put_stage(s, "t4", "dispatch", {"role_id": 1, "名": "钦灵"})
        assert not stage_store.put_stage(s, "t4", "dispatch", {"role_id": 2})  # stored already
        s.commit()
    with Session(engine) as s:
        run, results = stage_store.load_turn_in(s, "t4")
    assert run is not None and run.stage == "dispatch" and run.llm_latency_ms == 12.5
    assert results == {"dispatch": {"role_id": 1, "名": "钦灵"}}
    assert stage_store.stage_runs(engine, ["t4"]) == {"t4": {"dispatch": 1}}


@pytest.mark.parametrize(
    "db_url",
    [pytest.param("postgres", marks=pytest.mark.skipif(not PG_URL, reason="no PostgreSQL"))],
    indirect=True,
)
def test_a_lost_connection_is_invalidated_and_the_next_checkout_works(engine: Engine) -> None:
    """The fast path runs on PostgreSQL only (elsewhere it is SQLAlchemy's own execute)."""
    fast = FastStatement(select(RUN.c.turn_id).where(RUN.c.turn_id == bindparam("p_id")))
    with engine.connect() as conn:
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        with engine.connect() as other:
            other.exec_driver_sql(f"SELECT pg_terminate_backend({int(pid)})")
        with pytest.raises(DBAPIError) as caught:
            fast.rows(conn, {"p_id": "x"})
        assert caught.value.connection_invalidated
    with engine.connect() as conn:  # the pool gave a fresh connection
        assert fast.rows(conn, {"p_id": "x"}) == []
