"""What a chaos run found, reproduced with real workers, Redis and PostgreSQL, and fixed.

1. LLM error bodies that quote the input never leave the worker (reason, API, result backend,
   task events as Flower sees them, logs); the detail goes to the opt-in debug log only.
2. The LLM attempt limit counts per turn, not per Celery chain.
3. At most one LLM call is in flight per turn, however many chains the turn has.
4. ``enqueue_turn`` with the broker unreachable returns the turn id; the sweeper publishes it.
5. With a RabbitMQ broker, cooldowns and AutoState are shared by all workers through Redis.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from sqlmodel import Session

from nekoflow.api.turns import load_turn
from nekoflow.review.autostate_redis import RedisAutoState
from nekoflow.storage.turns import TurnRun
from nekoflow.turns import publications, store
from nekoflow.worldbook import WorldBook, WorldBookEntry
from nekoflow.worldbook.redis_cooldowns import RedisCooldowns
from nekoflow.worldbook.store import WorldBookStore
from tasks import enqueue_turn
from tasks.turns import publish_turn, turn_chain

from .conftest import wait_for
from .llm_server import FakeLLM, completion, user_text_of

SECRET = "我的秘密口令是青柠汽水"

pytestmark = pytest.mark.slow


def web_event(text: str, session: str = "h1") -> dict:
    return {"session_id": session, "message": text, "user_id": "u1", "display_name": "莱姆"}


def finished(handle) -> bool:
    run = handle.run()
    return run is not None and run.status in ("done", "failed")


def quoting_error(status: int) -> Any:
    """A server that fails with ``status`` and an error body quoting the user's input."""

    def script(body: dict[str, Any], n: int) -> tuple:
        said = f"upstream failed on input: {user_text_of(body)}"
        return status, {"error": {"message": said, "type": "upstream_error"}}, {}, 0.0

    return script


# --- 1. no message text in reasons, the API, the result backend, events or logs -----------


def test_llm_error_bodies_quoting_the_input_never_leave_the_worker(
    live, workers, redis_client: redis.Redis, tmp_path
) -> None:
    from tasks.app import app

    (tmp_path / "private").mkdir()
    debug_log = tmp_path / "private" / "debug.txt"  # not among the workers' *.log files
    events: list[dict[str, Any]] = []
    receivers: list[Any] = []

    def capture() -> None:  # what Flower receives: every task event of the run
        with app.connection_for_read() as conn:
            recv = app.events.Receiver(conn, handlers={"*": events.append})
            receivers.append(recv)
            recv.capture(limit=None, timeout=None, wakeup=False)

    # one retryable 500 quoting the input, then a non-retryable 400 quoting it again
    def script(body: dict[str, Any], n: int) -> tuple:
        return quoting_error(500 if n == 1 else 400)(body, n)

    with FakeLLM(script) as llm:
        catcher = threading.Thread(target=capture, daemon=True)
        catcher.start()
        wait_for(lambda: bool(receivers), 10, "the event receiver", lambda: "")
        time.sleep(0.5)
        workers.start(extra_env=llm.env(NEKOFLOW_DEBUG_LOG=str(debug_log)))
        handle = enqueue_turn("web", web_event(f"你好,{SECRET}"))
        wait_for(lambda: finished(handle), 60, "the turn to end", workers.logs)
        time.sleep(1.0)  # let the last task events arrive
        receivers[0].should_stop = True
        catcher.join(timeout=5)

    run = handle.run()
    assert run.status == "failed" and len(llm.calls) == 2
    assert SECRET in json.dumps(llm.calls, ensure_ascii=False)  # the server did see it
    host = llm.base_url.split("//", 1)[1].split("/", 1)[0]
    assert run.reason == (
        f"llm_call: LLM call failed after 2 attempt(s): LLMClientError (HTTP 400, model server "
        f"{host})"
    ), run.reason
    api = load_turn(live.engine, handle.turn_id).model_dump_json()
    assert SECRET not in api and "upstream failed" not in api
    backend = b"".join(
        redis_client.get(k) or b"" for k in redis_client.scan_iter("celery-task-meta-*")
    ).decode("utf-8", "replace")
    # Stage tasks keep no results (SQL holds them); whatever the backend holds is text-free.
    assert SECRET not in backend and "upstream failed" not in backend
    seen = json.dumps(events, ensure_ascii=False, default=str)
    assert "task-failed" in seen and "task-retried" in seen, "the event capture saw the run"
    assert SECRET not in seen and "upstream failed" not in seen
    assert SECRET not in workers.logs() and "upstream failed" not in workers.logs()
    # The opt-in debug log has the server's words, readable by its owner only.
    assert SECRET in debug_log.read_text(encoding="utf-8")
    assert stat.S_IMODE(os.stat(debug_log).st_mode) == 0o600


# --- 2. the attempt limit is the turn's, across re-published chains -----------------------


def test_llm_attempts_are_counted_per_turn_across_republished_chains(live, workers) -> None:
    def always_429(body: dict[str, Any], n: int) -> tuple:
        return (
            429,
            {"error": {"message": "slow down", "type": "rate_limit"}},
            {"Retry-After": "3"},
            0.0,
        )

    with FakeLLM(always_429) as llm:
        # The 3 s Retry-After outlasts the 1.5 s turn lease: the sweeper re-publishes the turn
        # while its chain waits to retry, so two chains take turns calling the model.
        workers.start(
            beat=True,
            extra_env=llm.env(
                NEKOFLOW_LLM_MAX_ATTEMPTS="3",
                NEKOFLOW_LLM_TIMEOUT="1",
                NEKOFLOW_TURN_LEASE_SECONDS="1.5",
                NEKOFLOW_SWEEP_INTERVAL_SECONDS="0.3",
                NEKOFLOW_LLM_BACKOFF_MAX="5",
            ),
        )
        handle = enqueue_turn("web", web_event("你在吗"))
        wait_for(lambda: finished(handle), 90, "the turn to fail", workers.logs)
        time.sleep(1.0)  # a late chain must not call again either
        calls = len(llm.calls)
    run = handle.run()
    runs = store.stage_runs(live.engine, [handle.turn_id])[handle.turn_id]
    assert run.publishes > 1 and runs["dispatch"] > 1, "the sweeper re-published the turn"
    assert calls == 3 and run.llm_attempts == 3, (calls, run.llm_attempts)
    assert run.status == "failed" and "after 3 attempt(s)" in run.reason


# --- 3. one call in flight per turn -------------------------------------------------------


def test_a_second_chain_never_calls_the_model_while_the_first_one_does(live, workers) -> None:
    def slow_ok(body: dict[str, Any], n: int) -> tuple:
        return 200, completion("【平静】我在这里。"), {}, 3.0

    with FakeLLM(slow_ok) as llm:
        workers.start(concurrency=3, extra_env=llm.env(NEKOFLOW_LLM_TIMEOUT="20"))
        handle = enqueue_turn("web", web_event("慢慢说"))
        wait_for(lambda: len(llm.calls) == 1, 30, "the first call", workers.logs)
        run = handle.run()
        publish_turn(run)  # a redelivery / a re-publication while the call is running
        publish_turn(run)
        handle.wait(timeout=60)

        def dispatched() -> int:
            return store.stage_runs(live.engine, [run.turn_id])[run.turn_id].get("dispatch", 0)

        # The two extra chains run (a busy box may start them only after the turn has ended;
        # how far each gets depends on timing): whatever they reach, the model is called once.
        wait_for(lambda: dispatched() >= 3, 60, "the extra chains' dispatch", workers.logs)
        time.sleep(0.5)  # and whatever follows their dispatch
        calls = len(llm.calls)
    assert handle.status() == "done", handle.reason
    assert calls == 1
    run = handle.run()
    assert run.llm_attempts == 1 and run.llm_lease_until is None


def test_the_sweeper_leaves_a_turn_whose_llm_call_holds_a_live_lease(live) -> None:
    from datetime import timedelta

    from nekoflow.storage.dialogue import utcnow

    old = utcnow() - timedelta(hours=1)
    with Session(live.engine) as s:
        for tid, lease in (("calling", utcnow() + timedelta(seconds=20)), ("dead", old)):
            s.add(
                TurnRun(
                    turn_id=tid,
                    channel="web",
                    scope_id=f"web:conversation:{tid}",
                    seq=1,
                    status="running",
                    stage="llm_call",
                    publishes=1,
                    llm_lease_until=lease,
                    created_at=old,
                    updated_at=old,
                )
            )
        s.commit()
    stuck = publications.stuck_turns(live.engine, older_than=timedelta(minutes=5))
    assert [r.turn_id for r in stuck] == ["dead"]


# --- 4. the broker down during enqueue_turn -----------------------------------------------


def test_enqueue_with_the_broker_down_returns_the_turn_and_the_sweeper_publishes_it(
    live, workers
) -> None:
    from tasks.app import app

    def publish_to_a_dead_broker(run: TurnRun) -> None:
        with app.connection_for_write("redis://127.0.0.1:1/15") as conn:
            turn_chain(run).apply_async(
                connection=conn, retry_policy={"max_retries": 1, "interval_start": 0}
            )

    good = live.publish
    live.publish = publish_to_a_dead_broker
    try:
        handle = enqueue_turn("web", web_event("断线了吗", session="down"))
        again = enqueue_turn("web", web_event("还在吗", session="down"))
    finally:
        live.publish = good
    assert handle.turn_id and handle.status() == "queued" and handle.publish_pending
    assert again.status() == "queued" and again.turn_id != handle.turn_id
    api = load_turn(live.engine, handle.turn_id)
    assert api is not None and api.publish_pending
    # The broker is back (workers and their sweeper use the real one): both turns run, in order.
    workers.start(beat=True, extra_env={"NEKOFLOW_SWEEP_INTERVAL_SECONDS": "0.5"})
    assert handle.wait(timeout=60) and again.wait(timeout=60)
    first, second = handle.run(), again.run()
    assert (first.status, second.status) == ("done", "done")
    assert first.finished_at <= second.started_at
    assert not handle.publish_pending


# --- 5. shared state on a RabbitMQ broker -------------------------------------------------


def _rabbitmq_up() -> bool:
    import socket

    try:
        socket.create_connection(("127.0.0.1", 5672), timeout=1).close()
        return True
    except OSError:
        return False


AMQP = "amqp://guest:guest@127.0.0.1:5672//"


@pytest.fixture
def rabbitmq_alone() -> Iterator[str]:
    """RabbitMQ's default vhost for this test alone: other pytest processes wait on a file lock
    (their workers would consume this test's turns from the shared queues and drop them as
    unknown), and messages an earlier run left in the queues are purged first."""
    from tasks.app import app

    lock = Path(tempfile.gettempdir()) / "nekoflow-tests-rabbitmq.lock"
    with lock.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            with app.connection_for_write(AMQP) as conn:
                app.control.purge(connection=conn)
            yield AMQP
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@pytest.mark.skipif(not _rabbitmq_up(), reason="RabbitMQ is not running on 127.0.0.1:5672")
def test_workers_on_rabbitmq_share_cooldowns_and_autostate_through_redis(
    live, workers, worker_env, redis_client: redis.Redis, redis_url: str, rabbitmq_alone: str
) -> None:
    from nekoflow.storage.dialogue import Role

    book = WorldBook(
        id="cool",
        name="书",
        entries=[
            WorldBookEntry(
                id="tower", name="白塔", keywords=["白塔"], content="白塔在北方。", cooldown_turns=5
            )
        ],
    )
    WorldBookStore(live.engine).import_books([book])
    amqp = rabbitmq_alone
    env = {
        "NEKOFLOW_BROKER_URL": amqp,
        "NEKOFLOW_REDIS_URL": redis_url,
        "NEKOFLOW_RESULT_BACKEND": redis_url,
        "NEKOFLOW_REVIEW_MODE": "llm",
    }
    # The enqueuer publishes to RabbitMQ too (the first turn of a scope is published at once).
    from tasks.app import app

    def publish_amqp(run: TurnRun) -> None:
        with app.connection_for_write(amqp) as conn:
            turn_chain(run).apply_async(connection=conn)

    live.publish = publish_amqp
    first = workers.start(extra_env=env, name="rabbit-a", concurrency=1)
    h1 = enqueue_turn("web", web_event("我们去白塔吧", session="rmq"))
    assert h1.wait(timeout=60) and h1.status() == "done", workers.logs()
    assert "IN-PROCESS STATE" not in workers.logs()
    # Worker A is gone; worker B (another process) must see A's cooldown and AutoState.
    workers.kill(first)
    workers.start(extra_env=env, name="rabbit-b", concurrency=1)
    h2 = enqueue_turn("web", web_event("白塔还远吗", session="rmq"))
    assert h2.wait(timeout=60) and h2.status() == "done", workers.logs()
    with Session(live.engine) as s:
        from nekoflow.storage.turns import TurnStage

        b1 = s.get(TurnStage, (h1.turn_id, "before_turn")).result
        b2 = s.get(TurnStage, (h2.turn_id, "before_turn")).result
        role = s.get(Role, h1.run().role_id)
    assert [e["id"] for e in b1["injected"]] == ["tower"]
    assert b2["injected"] == [], "worker B saw worker A's cooldown"
    cooldowns = RedisCooldowns(redis_client, prefix=worker_env["NEKOFLOW_REDIS_PREFIX"]).snapshot(
        "web:conversation:rmq"
    )
    assert cooldowns.injections == {"tower": 1}
    scores = RedisAutoState(redis_client, prefix=worker_env["NEKOFLOW_REDIS_PREFIX"]).get(
        str(role.id), "u1", "web:conversation:rmq"
    )
    assert scores, "the LLM review's quality scores are in Redis for every worker"
