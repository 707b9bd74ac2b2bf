"""The LLM lease's heartbeat on real databases: a held lease is renewed while its call runs, by
one thread per process; it stops at the call's end or when the lease is no longer ours."""

from __future__ import annotations

import multiprocessing
import threading
import time
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session

from nekoflow.storage import make_engine
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.turns import TurnRun
from nekoflow.turns import store
from nekoflow.turns.llm_lease import LeaseHeartbeat, claim_llm_call

LEASE = 0.6  # renewed every 0.2 s
TURN_LEASE = 1.5
"""The turn heartbeat tests' lease (a beat every 0.5 s): a beat may land up to 1 s late, as on a
busy CI box where a SQLite write waited out the 0.6 s lease's 0.4 s of slack."""


def _claimed(engine: Engine, turn_id: str) -> str:
    store.create_turn_run(
        engine, TurnRun(turn_id=turn_id, channel="web", scope_id=f"s-{turn_id}", request={})
    )
    assert store.claim_run(engine, turn_id)[0] == "claimed"
    claim = claim_llm_call(engine, turn_id, lease_seconds=LEASE, max_attempts=3)
    assert claim.kind == "claimed" and claim.owner
    return claim.owner


def _until(engine: Engine, turn_id: str) -> datetime | None:
    with Session(engine) as s:
        run = s.get(TurnRun, turn_id)
        assert run is not None
        return run.llm_lease_until


def test_leases_in_flight_are_renewed_by_one_thread_until_their_calls_end(engine: Engine) -> None:
    owners = {t: _claimed(engine, t) for t in ("a", "b", "c")}
    before = {t.ident for t in threading.enumerate()}
    with (
        LeaseHeartbeat(engine, "a", owners["a"], lease_seconds=LEASE),
        LeaseHeartbeat(engine, "b", owners["b"], lease_seconds=LEASE),
    ):
        with LeaseHeartbeat(engine, "c", owners["c"], lease_seconds=LEASE):
            beats = [t for t in threading.enumerate() if t.ident not in before]
            assert len(beats) <= 1  # at most the process's one heartbeat thread, once
        for _ in range(6):  # 1.5 s: well past the 0.6 s lease
            time.sleep(0.25)
            for turn_id in ("a", "b"):
                until = _until(engine, turn_id)
                assert until is not None and until > utcnow(), turn_id
        ended = _until(engine, "c")
        assert ended is not None and ended < utcnow()  # c's call ended: not renewed
    time.sleep(0.1)  # a renewal already under way when the call ended lands first
    held = _until(engine, "a")
    time.sleep(0.5)
    assert _until(engine, "a") == held  # a's call ended too: no more renewals
    assert [t for t in threading.enumerate() if t.name == "llm-lease-heartbeat"]


def test_a_lease_taken_over_is_not_renewed_any_more(engine: Engine) -> None:
    owner = _claimed(engine, "a")
    with LeaseHeartbeat(engine, "a", owner, lease_seconds=LEASE):
        time.sleep(0.3)
        with engine.begin() as conn:  # another chain's claim after this one's ran out
            conn.exec_driver_sql(
                "UPDATE turn_run SET llm_lease_owner = 'other', llm_lease_until = NULL"
                " WHERE turn_id = 'a'"
            )
        time.sleep(0.6)
        assert _until(engine, "a") is None  # the heartbeat did not touch the other's lease


def _child(url: str, owner: str, out: multiprocessing.Queue) -> None:
    engine = make_engine(url)
    with LeaseHeartbeat(engine, "a", owner, lease_seconds=LEASE):
        time.sleep(1.2)
        until = _until(engine, "a")
        out.put(until is not None and until > utcnow())
    engine.dispose()


def test_a_forked_child_renews_its_own_leases(engine: Engine, db_url: str) -> None:
    """The parent's heartbeat thread does not exist in a prefork child: the child starts one."""
    owner = _claimed(engine, "a")
    _claimed(engine, "warm")  # the parent's thread runs before the fork
    with LeaseHeartbeat(engine, "warm", "nobody", lease_seconds=LEASE):
        pass
    engine.dispose()
    ctx = multiprocessing.get_context("fork")
    out: multiprocessing.Queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(db_url, owner, out))
    child.start()
    child.join(timeout=30)
    assert child.exitcode == 0
    assert out.get(timeout=5) is True


def _updated(engine: Engine, turn_id: str) -> datetime:
    with Session(engine) as s:
        run = s.get(TurnRun, turn_id)
        assert run is not None
        return run.updated_at


def test_a_turn_worked_on_is_never_stuck_and_a_finished_one_stops_beating(engine: Engine) -> None:
    """Any stage (and a delivery) holds its turn by the turn heartbeat, not only the model call:
    the sweeper never finds a turn whose worker is alive, whatever the stage."""
    from datetime import timedelta

    from nekoflow.turns.heartbeat import TurnHeartbeat
    from nekoflow.turns.publications import stuck_turns

    for turn_id in ("memory", "idle"):
        store.create_turn_run(
            engine, TurnRun(turn_id=turn_id, channel="web", scope_id=f"s-{turn_id}", request={})
        )
        assert store.claim_run(engine, turn_id)[0] == "claimed"
    with TurnHeartbeat(engine, "memory", lease_seconds=TURN_LEASE):
        for _ in range(14):  # 3.5 s: well past the 1.5 s lease
            time.sleep(0.25)
            stuck = stuck_turns(engine, older_than=timedelta(seconds=TURN_LEASE))
            assert "memory" not in [r.turn_id for r in stuck]
        assert "idle" in [r.turn_id for r in stuck]  # nobody works on it: the sweeper's
        with engine.begin() as conn:  # the turn ends (delivery: nothing to send)
            conn.exec_driver_sql(
                "UPDATE turn_run SET status = 'done', delivery_status = 'sent'"
                " WHERE turn_id = 'memory'"
            )
        time.sleep(TURN_LEASE / 3 + 0.2)  # a beat already under way lands first
        ended = _updated(engine, "memory")
        time.sleep(TURN_LEASE / 3 * 2)
        assert _updated(engine, "memory") == ended  # finished and delivered: no more beats


def test_an_open_delivery_is_kept_fresh_while_it_is_being_sent(engine: Engine) -> None:
    from datetime import timedelta

    from nekoflow.delivery.outbox import stalled_deliveries
    from nekoflow.turns.heartbeat import TurnHeartbeat

    store.create_turn_run(engine, TurnRun(turn_id="d", channel="web", scope_id="s-d", request={}))
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "UPDATE turn_run SET status = 'done', delivery_status = 'sending' WHERE turn_id = 'd'"
        )
    stale = timedelta(seconds=TURN_LEASE)
    with TurnHeartbeat(engine, "d", lease_seconds=TURN_LEASE):
        for _ in range(14):  # 3.5 s: well past the lease
            time.sleep(0.25)
            assert not stalled_deliveries(engine, older_than=stale)
    time.sleep(TURN_LEASE + 0.1)
    assert [r.turn_id for r in stalled_deliveries(engine, older_than=stale)] == ["d"]


def test_the_beat_thread_is_woken_only_for_a_beat_due_before_its_own_wake_up() -> None:
    """A beat due sooner than the thread's next wake-up is renewed on time (the thread is
    woken); one due later waits for that wake-up (no context switch per stage)."""
    from nekoflow.turns.llm_lease import _Beats

    beats, calls = _Beats(), []
    slow = beats.add(lambda: calls.append("slow") or True, 30.0)
    time.sleep(0.05)  # the thread now sleeps until the slow beat is due
    woken = []
    real_notify = beats._wake.notify
    beats._wake.notify = lambda n=1: (woken.append(n), real_notify(n))  # type: ignore[method-assign]
    later = beats.add(lambda: True, 60.0)
    assert woken == [], "a beat due after the thread's own wake-up needs no wake-up"
    fast = beats.add(lambda: calls.append("fast") or True, 0.1)
    assert woken == [1]
    deadline = time.monotonic() + 5
    while calls.count("fast") < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert calls.count("fast") >= 2 and "slow" not in calls
    for key in (slow, later, fast):
        beats.remove(key)
