"""Turn store: per-scope sequence, claims, dedupe, stage results, stuck-turn detection."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from nekoflow.storage import create_all, make_engine
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.turns import TurnRun, TurnStatus
from nekoflow.turns import llm_lease, publications, store
from nekoflow.turns.llm_lease import claim_llm_call, claim_llm_call_in, release_llm_lease
from nekoflow.turns.stage_store import ExtraRows
from tests.conftest import PG_URL


def new_run(turn_id: str, scope: str = "s1", **kw) -> TurnRun:
    return TurnRun(turn_id=turn_id, channel="web", scope_id=scope, **kw)


def test_sequence_per_scope(engine: Engine) -> None:
    a, _ = store.create_turn_run(engine, new_run("a"))
    b, _ = store.create_turn_run(engine, new_run("b"))
    c, _ = store.create_turn_run(engine, new_run("c", scope="s2"))
    assert (a.seq, b.seq, c.seq) == (1, 2, 1)


def test_concurrent_enqueues_get_distinct_sequence_numbers(engine: Engine) -> None:
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            store.create_turn_run(engine, new_run(f"t{i}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with Session(engine) as s:
        seqs = sorted(s.get(TurnRun, f"t{i}").seq for i in range(12))
    assert seqs == list(range(1, 13))


def test_fifty_concurrent_enqueues_in_one_scope_are_numbered_in_one_go(engine: Engine) -> None:
    barrier = threading.Barrier(50)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        barrier.wait()
        try:
            store.create_turn_run(engine, new_run(f"t{i}", dedupe_key=f"web:{i % 25}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with Session(engine) as s:
        rows = s.exec(select(TurnRun)).all()
    assert len(rows) == 25  # one per dedupe key
    assert sorted(r.seq for r in rows) == list(range(1, 26))  # rolled-back numbers reused


def test_counter_starts_after_turns_stored_before_it(engine: Engine) -> None:
    with Session(engine) as s:
        s.add(new_run("old", seq=7))
        s.commit()
    row, created = store.create_turn_run(engine, new_run("new"))
    assert created and row.seq == 8


def test_dedupe_key_returns_existing_turn(engine: Engine) -> None:
    _, created = store.create_turn_run(engine, new_run("a", dedupe_key="web:m1"))
    again, created2 = store.create_turn_run(engine, new_run("b", dedupe_key="web:m1"))
    assert created and not created2
    assert again.turn_id == "a"
    assert store.get_run(engine, "b") is None


def test_claim_respects_scope_order(engine: Engine) -> None:
    store.create_turn_run(engine, new_run("a"))
    store.create_turn_run(engine, new_run("b"))
    assert store.claim(engine, "b") == "blocked"
    assert store.claim(engine, "a") == "claimed"
    assert store.claim(engine, "a") == "running"
    assert publications.next_queued_in_scope(engine, "s1") is None  # a is still running
    store.finish(engine, "a", TurnStatus.done)
    assert store.claim(engine, "a") == "finished"
    nxt = publications.next_queued_in_scope(engine, "s1")
    assert nxt is not None and nxt.turn_id == "b"
    assert store.claim(engine, "b") == "claimed"


def test_stage_results_round_trip(engine: Engine) -> None:
    store.create_turn_run(engine, new_run("a"))
    with Session(engine) as s:
        assert store.get_stage(s, "a", "dispatch") is None
        assert store.put_stage(s, "a", "dispatch", {"save_id": 3}, role_id=7)
        s.commit()
    with Session(engine) as s:  # a second delivery's result loses and writes nothing
        assert not store.put_stage(s, "a", "dispatch", {"save_id": 4}, role_id=8)
        s.commit()
    with Session(engine) as s:
        assert store.get_stage(s, "a", "dispatch") == {"save_id": 3}
        run = s.get(TurnRun, "a")
        assert (run.stage, run.role_id) == ("dispatch", 7)


def test_put_stage_counts_the_run_and_may_commit_asynchronously(db_url: str) -> None:
    # the server's own default (the suite's sessions commit asynchronously throughout)
    engine = make_engine(db_url.replace("synchronous_commit%3Doff", "synchronous_commit%3Don"))
    create_all(engine)
    store.create_turn_run(engine, new_run("a"))
    with Session(engine) as s:
        assert store.put_stage(s, "a", "before_turn", {"x": 1}, async_commit=True, prompt_tokens=5)
        if engine.dialect.name == "postgresql":  # the commit will not wait for the WAL flush
            assert s.execute(text("SHOW synchronous_commit")).scalar() == "off"
        s.commit()
    with Session(engine) as s:
        if engine.dialect.name == "postgresql":  # only that transaction: SET LOCAL semantics
            assert s.execute(text("SHOW synchronous_commit")).scalar() == "on"
        assert not store.put_stage(s, "a", "before_turn", {"x": 2}, async_commit=True)
        if engine.dialect.name == "postgresql":  # nothing stored: nothing changed either
            assert s.execute(text("SHOW synchronous_commit")).scalar() == "on"
        s.commit()
    # The losing delivery stored nothing: the runner counts it, not put_stage.
    assert store.stage_runs(engine, ["a"]) == {"a": {"before_turn": 1}}
    with Session(engine) as s:
        run = s.get(TurnRun, "a")
        assert (run.stage, run.prompt_tokens) == ("before_turn", 5)
        assert store.get_stage(s, "a", "before_turn") == {"x": 1}


def test_rows_stored_with_a_result_are_stored_only_with_it(engine: Engine) -> None:
    """The usage a stage paid for goes in with its result (one statement on PostgreSQL), and
    not at all when another delivery's result is already stored."""
    from nekoflow.storage.usage import LLMUsage
    from nekoflow.usage.meter import UsageEntry
    from nekoflow.usage.store import USAGE_TABLE, usage_rows

    store.create_turn_run(engine, new_run("a"))

    def rows(kind: str, *entries: UsageEntry) -> ExtraRows:
        return USAGE_TABLE, usage_rows(entries, kind=kind, turn_id="a", channel="web")

    with Session(engine) as s:
        two = rows("review", UsageEntry("m1", 10, 2), UsageEntry("m2", 5, 1))
        assert store.put_stage(s, "a", "review", {"ok": 1}, rows=two, llm_model="m1")
        s.commit()
    with Session(engine) as s:  # the losing delivery's usage is not kept
        assert not store.put_stage(
            s, "a", "review", {"ok": 2}, rows=rows("review", UsageEntry("m3", 7, 7))
        )
        s.commit()
    with Session(engine) as s:
        assert store.put_stage(
            s, "a", "llm_call", {"text": "x"}, rows=rows("reply", UsageEntry("m1", 3, 4))
        )
        s.commit()
    with Session(engine) as s:
        got = sorted(
            (u.kind, u.n, u.model, u.prompt_tokens, u.completion_tokens)
            for u in s.exec(select(LLMUsage)).all()
        )
        assert got == [
            ("reply", 1, "m1", 3, 4),
            ("review", 1, "m1", 10, 2),
            ("review", 2, "m2", 5, 1),
        ]
        assert s.get(TurnRun, "a").llm_model == "m1"
        assert store.get_stage(s, "a", "review") == {"ok": 1}


def test_stuck_turns(engine: Engine) -> None:
    store.create_turn_run(engine, new_run("a"))
    store.create_turn_run(engine, new_run("b"))
    store.create_turn_run(engine, new_run("c", scope="s2"))
    store.claim(engine, "c")
    store.finish(engine, "c", TurnStatus.done)
    later = utcnow() + timedelta(minutes=10)
    stuck = publications.stuck_turns(engine, older_than=timedelta(minutes=5), now=later)
    assert [r.turn_id for r in stuck] == ["a"]  # b waits behind a; c is done
    assert publications.stuck_turns(engine, older_than=timedelta(minutes=5)) == []
    store.claim(engine, "a")
    stuck = publications.stuck_turns(engine, older_than=timedelta(minutes=5), now=later)
    assert [r.turn_id for r in stuck] == ["a"]


def _end(s: Session, turn_id: str) -> None:
    s.execute(text("UPDATE turn_run SET status = 'done' WHERE turn_id = :t"), {"t": turn_id})


def test_an_enqueuer_waits_for_a_finisher_holding_the_scope_lock_then_publishes_itself(
    engine: Engine,
) -> None:
    a, _ = store.create_turn_run(engine, new_run("a"), claim_publish=True)
    assert a.publishes == 1  # first in its scope: the enqueuer publishes it
    assert store.claim_run(engine, "a")[0] == "claimed"
    got: dict[str, TurnRun] = {}

    def enqueue() -> None:
        got["b"] = store.create_turn_run(engine, new_run("b"), claim_publish=True)[0]

    with Session(engine) as s:
        _end(s, "a")
        assert store.claim_next_in(s, "s1") is None  # nothing queued yet
        t = threading.Thread(target=enqueue)
        t.start()
        t.join(0.5)
        assert t.is_alive()  # the enqueuer waits for the scope's lock
        s.commit()
    t.join(30)
    assert got["b"].publishes == 1  # it saw the scope free: it publishes its turn


def test_a_finisher_claims_the_turn_an_enqueuer_left_behind_it_exactly_once(
    engine: Engine,
) -> None:
    store.create_turn_run(engine, new_run("a"), claim_publish=True)
    assert store.claim_run(engine, "a")[0] == "claimed"
    b, _ = store.create_turn_run(engine, new_run("b"), claim_publish=True)
    assert b.publishes == 0  # behind a running turn: not the enqueuer's to publish
    with Session(engine) as s:
        _end(s, "a")
        nxt = store.claim_next_in(s, "s1")
        s.commit()
    assert isinstance(nxt, TurnRun) and nxt.turn_id == "b" and nxt.publishes == 1
    with Session(engine) as s:
        assert store.claim_next_in(s, "s1") is None  # claimed once only
        s.commit()
    assert publications.first_publish(engine, "b") is False


def test_a_scope_without_a_lock_row_hands_off_after_the_commit(engine: Engine) -> None:
    with Session(engine) as s:
        assert store.claim_next_in(s, "never-enqueued") is False


# PostgreSQL only: SQLite serialises writers, so no release can land between the claim's two
# statements there (the race cannot happen).
@pytest.mark.parametrize(
    "db_url",
    [pytest.param("postgres", marks=pytest.mark.skipif(not PG_URL, reason="no PostgreSQL"))],
    indirect=True,
)
def test_a_lease_released_between_the_claim_and_its_read_is_busy_not_used_up(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.create_turn_run(engine, new_run("a"))
    assert store.claim_run(engine, "a")[0] == "claimed"
    first = claim_llm_call(engine, "a", lease_seconds=30, max_attempts=3)
    assert first.kind == "claimed" and first.attempt == 1
    state = llm_lease._LEASE_STATE
    released: list[bool] = []

    class ReleasedFirst:
        """The lease's state read, with the first call ending just before it runs."""

        def first(self, bind: Any, params: Any) -> Any:
            if not released:
                released.append(True)
                release_llm_lease(engine, "a", first.owner)
            return state.first(bind, params)

    monkeypatch.setattr(llm_lease, "_LEASE_STATE", ReleasedFirst())
    with engine.begin() as conn:
        second = claim_llm_call_in(conn, "a", lease_seconds=30, max_attempts=3)
    assert released and second.kind == "busy" and second.attempt == 1  # look again, not failed
    assert 0 < second.wait_seconds <= 1


def test_a_fresh_process_reads_a_turn_row_before_any_orm_use() -> None:
    """A worker's first task may read its turn through the Core path before the ORM has set
    up its mappers (which it does on first use): the row still becomes a TurnRun."""
    import subprocess
    import sys

    code = (
        "from nekoflow.turns.stage_store import RUN_COLUMNS, run_from_row\n"
        "values = ['t1' if c == 'turn_id' else None for c in RUN_COLUMNS]\n"
        "print(run_from_row(values).turn_id)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "t1"
