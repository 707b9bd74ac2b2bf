"""The Celery app the turn benchmark's worker runs: nekoflow's tasks plus a bare six-task chain.

The bare chain has the same task options, queues and routing as the turn chain, and its stages
do nothing (``llm_call`` sleeps the model's latency when one is set); the last one counts
finished chains in Redis so the benchmark sees them end.
"""

from __future__ import annotations

import os
import time
from typing import Any

import redis
from celery import Task, chain

import tasks  # noqa: F401  (registers nekoflow.turn.*)
from nekoflow.storage.turns import STAGES
from tasks.app import app
from tasks.turns import QUEUES

COUNTER_KEY = "bench:bare:done"
LATENCY = float(os.environ.get("NEKOFLOW_BENCH_LLM_LATENCY", "0") or 0)
"""Seconds the bare chain's llm_call stage sleeps (the loopback model's latency)."""
_redis: redis.Redis | None = None


def _counter() -> redis.Redis:
    global _redis
    if _redis is None:
        _redis = redis.Redis.from_url(os.environ["NEKOFLOW_BROKER_URL"])
    return _redis


_OPTIONS: dict[str, Any] = {"bind": True, "acks_late": True, "reject_on_worker_lost": True}


def _make(stage: str, last: bool) -> Task:
    def noop(self: Task, turn_id: str, scope_id: str | None = None) -> dict[str, Any]:
        if stage == "llm_call" and LATENCY:
            time.sleep(LATENCY)  # the model's own latency, on the same pool as the real call
        if last:
            _counter().rpush(COUNTER_KEY, turn_id)
        return {"turn_id": turn_id, "stage": stage, "status": "ok"}

    noop.__name__ = f"noop_{stage}"
    return app.task(name=f"bench.bare.{stage}", **_OPTIONS)(noop)


BARE_TASKS = {stage: _make(stage, stage == STAGES[-1]) for stage in STAGES}


def bare_chain(turn_id: str, scope_id: str) -> chain:
    """Six no-op stages with the turn chain's queues, argsrepr and kwargsrepr."""
    sigs = []
    for stage in STAGES:
        sig = BARE_TASKS[stage].si(turn_id, scope_id)
        sig.set(
            queue=QUEUES[stage],
            argsrepr=repr((turn_id, scope_id)),
            kwargsrepr=repr({"stage": stage}),
        )
        sigs.append(sig)
    return chain(*sigs)
