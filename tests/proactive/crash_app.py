"""The real Celery app plus faults: the turn tests' ``crash:{before|after}:{stage}`` hooks
(``tests.turns.crash_app``), and when Redis holds ``crash:proactive:fired`` = a schedule id, the
sweep that has started that schedule's turn SIGKILLs its worker before marking the schedule
fired (a restart mid-fire)."""

from __future__ import annotations

import os
import signal
from typing import Any

import redis

from nekoflow.proactive import store
from tasks import app
from tests.turns import crash_app as _stage_crashes  # noqa: F401  (its signal hooks)

__all__ = ["app"]

_redis = redis.Redis.from_url(os.environ["NEKOFLOW_REDIS_URL"])
_settle = store.settle


def _settle_or_die(engine: Any, schedule_id: int, state: str, **values: Any) -> bool:
    key = "crash:proactive:fired"
    if state == "fired" and _redis.get(key) == str(schedule_id).encode() and _redis.delete(key):
        _redis.rpush("crash:log", f"proactive:{schedule_id}")
        os.killpg(os.getpgid(0), signal.SIGKILL)
    return _settle(engine, schedule_id, state, **values)


store.settle = _settle_or_die  # type: ignore[assignment]
