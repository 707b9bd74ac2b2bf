"""A SIGKILLed worker's turn resumes within the (short, default) turn lease, and a live turn is
never re-published under it: real worker processes, beat, the loopback model holding calls."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from nekoflow.settings import Settings
from nekoflow.turns import store
from tasks import enqueue_turn
from tests.conftest import production_db_only

from .conftest import wait_for
from .llm_server import FakeLLM, completion

pytestmark = pytest.mark.slow


def web_event(text: str) -> dict:
    return {"session_id": "lease", "message": text, "user_id": "u1", "display_name": "莱姆"}


def held_first_call(release: threading.Event) -> Any:
    """The model holds its first call until ``release`` is set; later calls answer at once."""

    def script(body: dict[str, Any], n: int) -> tuple:
        if n == 1:
            release.wait(timeout=600)
        return 200, completion(f"【平静】第{n}次回答。"), {}, 0.0

    return script


def sweeps_done(workers: Any) -> int:
    """How many sweeper runs the workers' (whole) logs show as finished."""
    return sum(
        1
        for log in workers.log_dir.glob("*.log")
        for line in log.read_text(errors="replace").splitlines()
        if "nekoflow.sweep[" in line and "succeeded" in line
    )


def test_the_turn_lease_defaults_to_at_most_30_seconds_and_allows_a_longer_llm_timeout() -> None:
    settings = Settings(database_url="sqlite:///x.db")
    assert settings.turn_lease_seconds <= 30
    assert settings.sweep_interval_seconds < settings.turn_lease_seconds
    assert settings.llm_lease_seconds <= settings.turn_lease_seconds
    # a model slower than the lease is no misconfiguration: the call's heartbeat holds the turn
    assert Settings(database_url="sqlite:///x.db", llm_timeout=120).llm_timeout == 120


@production_db_only
def test_a_sigkilled_workers_turn_resumes_with_the_default_lease_and_sweep(live, workers) -> None:
    release = threading.Event()
    with FakeLLM(held_first_call(release)) as llm:
        try:
            # beat and the turns/outbound queues in one worker, the model call in another;
            # lease and sweep interval at their defaults (the worker env sets neither)
            workers.start(queues="turns,outbound", beat=True, extra_env=llm.env(), name="b")
            caller = workers.start(queues="llm", extra_env=llm.env(), name="a")
            handle = enqueue_turn("web", web_event("你还在吗"))
            wait_for(lambda: len(llm.calls) == 1, 60, "the first model call", workers.logs)
            workers.kill(caller)  # SIGKILL mid-call: nothing acks, nothing releases the lease
            run = handle.run()
            assert run.status == "running" and run.stage == "llm_call" and run.publishes == 1
            workers.start(queues="llm", extra_env=llm.env(), name="c")
            # the default lease (≤ 30 s, checked above) plus a default sweep: well inside 90 s,
            # where the 300 s lease of old left the turn `running 2/6` for over five minutes
            handle.wait(timeout=90)
            run = handle.run()
            assert run.status == "done", (run.status, run.reason, workers.logs())
            assert run.publishes == 2, "the sweeper re-published the dead worker's turn once"
            assert len(llm.calls) == 2 and run.llm_attempts == 2
        finally:
            release.set()


@production_db_only
def test_a_model_call_longer_than_the_turn_lease_is_never_re_published(live, workers) -> None:
    release = threading.Event()
    lease, interval = 6.0, 0.5  # the LLM lease: 3 s, renewed every second
    with FakeLLM(held_first_call(release)) as llm:
        try:
            env = llm.env(
                NEKOFLOW_LLM_TIMEOUT="60",  # ten times the turn lease
                NEKOFLOW_TURN_LEASE_SECONDS=str(lease),
                NEKOFLOW_SWEEP_INTERVAL_SECONDS=str(interval),
            )
            workers.start(beat=True, extra_env=env)
            handle = enqueue_turn("web", web_event("慢慢想"))
            wait_for(lambda: len(llm.calls) == 1, 60, "the model call", workers.logs)
            # (a busy box may start the chain later than the short lease: a queued turn not
            # yet picked up may be re-published before its call; never during the call)
            publishes = handle.run().publishes
            seen = sweeps_done(workers)
            # the call is held while the sweeper runs over and over: at least two leases' worth
            # of sweeps (beat spaces them by the interval), each finding the turn alive
            wanted = seen + int(2 * lease / interval) + 1
            wait_for(lambda: sweeps_done(workers) >= wanted, 120, "sweeps", workers.logs)
            run = handle.run()
            assert run.status == "running" and run.publishes == publishes, "re-published mid-call"
            release.set()
            handle.wait(timeout=60)
        finally:
            release.set()
    run = handle.run()
    assert run.status == "done" and run.publishes == publishes
    assert store.stage_runs(live.engine, [run.turn_id])[run.turn_id]["dispatch"] == publishes
    assert len(llm.calls) == 1 and run.llm_attempts == 1


def test_a_turn_re_published_already_waits_longer_before_the_next_re_publication(engine) -> None:
    """A turn stuck in a backed-up queue is re-published after one lease, then after two, four…
    (at most eight): the sweeper does not pile chains onto a busy broker every lease."""
    from datetime import timedelta

    from sqlmodel import Session

    from nekoflow.storage.dialogue import utcnow
    from nekoflow.storage.turns import TurnRun
    from nekoflow.turns.publications import stuck_turns

    now, lease = utcnow(), timedelta(seconds=20)
    quiet = {  # turn id: (publishes, seconds untouched)
        "first": (1, 25),
        "second-early": (2, 35),
        "second-due": (2, 45),
        "many-early": (9, 150),
        "many-due": (9, 165),
    }
    with Session(engine) as s:
        for turn_id, (publishes, ago) in quiet.items():
            s.add(
                TurnRun(
                    turn_id=turn_id,
                    channel="web",
                    scope_id=f"web:conversation:{turn_id}",
                    seq=1,
                    status="running",
                    stage="dispatch",
                    publishes=publishes,
                    created_at=now - timedelta(seconds=ago),
                    updated_at=now - timedelta(seconds=ago),
                )
            )
        s.commit()
    stuck = {r.turn_id for r in stuck_turns(engine, older_than=lease, now=now)}
    assert stuck == {"first", "second-due", "many-due"}
