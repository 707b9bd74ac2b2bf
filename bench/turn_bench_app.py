"""The Celery app the turn benchmark's worker runs: nekoflow's tasks plus two yardstick chains.

Both have the same task options, queues and routing as the turn chain (``llm_call`` sleeps the
model's latency when one is set; the last stage counts finished chains in Redis so the benchmark
sees them end):

- the **bare** chain: six tasks that do nothing — what Celery itself costs;
- the **stored** chain: six tasks each doing the least a stage that keeps its state in SQL can
  do — read the turn's row and its stored stage results (one statement), store its own result
  (one insert) and commit (without waiting for the WAL flush, but the last stage) — on psycopg
  directly, with no ORM or SQLAlchemy in between: the floor under any pipeline whose stages
  load, decide and store.
"""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis
from celery import Task, chain

import tasks  # noqa: F401  (registers nekoflow.turn.*)
from nekoflow.storage.turns import STAGES
from tasks.app import app
from tasks.turns import QUEUES

COUNTER_KEY = "bench:bare:done"
STORED_KEY = "bench:stored:done"
LATENCY = float(os.environ.get("NEKOFLOW_BENCH_LLM_LATENCY", "0") or 0)
"""Seconds the bare chain's llm_call stage sleeps (the loopback model's latency)."""
_redis: redis.Redis | None = None


def _counter() -> redis.Redis:
    global _redis
    if _redis is None:
        _redis = redis.Redis.from_url(os.environ["NEKOFLOW_BROKER_URL"])
    return _redis


_OPTIONS: dict[str, Any] = {"bind": True, "acks_late": True, "reject_on_worker_lost": True}


def _make(kind: str, stage: str, last: bool) -> Task:
    """One stage task of the ``bare`` chain (does nothing) or the ``stored`` one (``_store``)."""
    key = STORED_KEY if kind == "stored" else COUNTER_KEY

    def stage_task(self: Task, turn_id: str, scope_id: str | None = None) -> dict[str, Any]:
        if stage == "llm_call" and LATENCY:
            if kind == "stored":
                _store(turn_id, "llm_claim", False)  # the call's claim, committed before it
            time.sleep(LATENCY)  # the model's own latency, on the same pool as the real call
        if kind == "stored":
            _store(turn_id, stage, last)
        if last:
            _counter().rpush(key, turn_id)
        return {"turn_id": turn_id, "stage": stage, "status": "ok"}

    stage_task.__name__ = f"{kind}_{stage}"
    return app.task(name=f"bench.{kind}.{stage}", **_OPTIONS)(stage_task)


BARE_TASKS = {stage: _make("bare", stage, stage == STAGES[-1]) for stage in STAGES}

_READ = (
    "SELECT t.turn_id, t.scope_id, (SELECT json_object_agg(s.stage, s.result) FROM bench_stage s"
    " WHERE s.turn_id = t.turn_id) FROM bench_turn t WHERE t.turn_id = %s"
)
_STORE = (
    "INSERT INTO bench_stage (turn_id, stage, result) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
)
_pool: queue.LifoQueue[Any] = queue.LifoQueue()


@contextmanager
def _connection() -> Iterator[Any]:
    """A psycopg connection of this process (threads share a small LIFO pool)."""
    import psycopg

    try:
        conn = _pool.get_nowait()
    except queue.Empty:
        conn = psycopg.connect(os.environ["NEKOFLOW_DATABASE_URL"])
    try:
        yield conn
    finally:
        _pool.put(conn)


def close_pool() -> None:
    """Close this process's pooled connections (before the benchmark drops its database)."""
    while True:
        try:
            _pool.get_nowait().close()
        except queue.Empty:
            return


def _store(turn_id: str, stage: str, last: bool) -> None:
    """A stage's least durable step: read the turn and its results, store one, commit."""
    from psycopg.types.json import Json

    with _connection() as conn, conn.cursor() as cur:
        if not last:  # as nekoflow's intermediate stages (a lost one is only redone)
            cur.execute("SET LOCAL synchronous_commit TO OFF")
        cur.execute(_READ, (turn_id,))
        if cur.fetchone() is None:
            raise RuntimeError(f"no turn {turn_id}")
        cur.execute(_STORE, (turn_id, stage, Json({"stage": stage, "status": "ok"})))
        conn.commit()


STORED_TASKS = {stage: _make("stored", stage, stage == STAGES[-1]) for stage in STAGES}


def start_stored(turn_id: str, scope_id: str) -> None:
    """The stored chain's enqueue: the turn's row (one insert, committed), then the chain."""
    with _connection() as conn:
        conn.execute(
            "INSERT INTO bench_turn (turn_id, scope_id) VALUES (%s, %s)", (turn_id, scope_id)
        )
        conn.commit()
    _chain(STORED_TASKS, turn_id, scope_id).apply_async()


def bare_chain(turn_id: str, scope_id: str) -> chain:
    """Six no-op stages with the turn chain's queues, argsrepr and kwargsrepr."""
    return _chain(BARE_TASKS, turn_id, scope_id)


def _chain(stage_tasks: dict[str, Task], turn_id: str, scope_id: str) -> chain:
    sigs = []
    for stage in STAGES:
        sig = stage_tasks[stage].si(turn_id, scope_id)
        sig.set(
            queue=QUEUES[stage],
            argsrepr=repr((turn_id, scope_id)),
            kwargsrepr=repr({"stage": stage}),
        )
        sigs.append(sig)
    return chain(*sigs)
