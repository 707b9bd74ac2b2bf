"""The real Celery app plus a fault-injection hook, for the crash tests only.

When Redis holds ``crash:{before|after}:{stage}``, the first task of that stage to run kills the
worker's whole process group with SIGKILL — before the stage body runs, or after it returned but
before the message was acknowledged.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import redis
from celery.signals import task_postrun, task_prerun

from tasks import app

__all__ = ["app"]

_redis = redis.Redis.from_url(os.environ["NEKOFLOW_REDIS_URL"])


def _maybe_crash(point: str, task: Any) -> None:
    stage = str(getattr(task, "name", "")).rsplit(".", 1)[-1]
    if _redis.getdel(f"crash:{point}:{stage}"):
        _redis.rpush("crash:log", f"{point}:{stage}")
        os.killpg(os.getpgid(0), signal.SIGKILL)


@task_prerun.connect
def _before(task: Any = None, **_: Any) -> None:
    _maybe_crash("before", task)


@task_postrun.connect
def _after(task: Any = None, **_: Any) -> None:
    _maybe_crash("after", task)
