"""Per-process turn dependencies for workers and enqueuers (built lazily, rebuilt after fork)."""

from __future__ import annotations

import os
import threading

from nekoflow.settings import get_settings
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.config_watch import refresh as refresh_config
from nekoflow.turns.deps import Publisher, TurnDeps

_lock = threading.Lock()
_deps: TurnDeps | None = None
_pid: int | None = None
_publisher: Publisher | None = None


def use_publisher(publish: Publisher) -> None:
    """Set how this process's deps publish a turn's chain (``nekoflow.worker.turns`` sets its
    own when imported: the stage tasks read the deps, so the deps cannot import them)."""
    global _publisher
    _publisher = publish


def _publish(run: TurnRun) -> None:
    if _publisher is None:
        raise RuntimeError(f"no publisher configured to start turn {run.turn_id}")
    _publisher(run)


def get_deps() -> TurnDeps:
    """This process's TurnDeps, publishing through the Celery app."""
    global _deps, _pid
    with _lock:
        if _deps is None or _pid != os.getpid():
            _deps = TurnDeps.from_settings(get_settings(), publish=_publish)
            _pid = os.getpid()
        deps = _deps
    refresh_config(deps)  # config.ini edited since start-up: reload it
    return deps


def set_deps(deps: TurnDeps | None) -> None:
    """Replace this process's TurnDeps (the demo and tests inject their own)."""
    global _deps, _pid
    with _lock:
        _deps = deps
        _pid = os.getpid() if deps is not None else None


def publish(run: TurnRun) -> None:
    """Publish ``run``'s chain with this process's deps (used by the sweeper)."""
    get_deps().publish(run)
