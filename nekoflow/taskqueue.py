"""The task queue as the library sees it: what the edges (CLIs, the API, notices) ask of workers.

The Celery app (:mod:`nekoflow.worker`) implements :class:`TaskQueue` and registers it when it is
imported; library code asks :func:`task_queue` and never imports the worker, so Celery stays an
outer layer (``lint-imports`` holds that). Until one is registered, the first call imports the
app by name (:data:`nekoflow.queues.WORKER_APP`, as ``celery -A`` does); tests and embedders may
:func:`register` another.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from nekoflow.queues import WORKER_APP

if TYPE_CHECKING:
    from rich.console import Console

    from nekoflow.settings import Settings
    from nekoflow.storage.turns import TurnRun
    from nekoflow.turns.deps import TurnDeps
    from nekoflow.turns.handle import TurnHandle


class TaskQueue(Protocol):
    """The operations of the worker layer the rest of nekoflow calls."""

    def get_deps(self) -> TurnDeps:
        """This process's TurnDeps, publishing turns through the queue."""
        ...

    def publish_turn(self, run: TurnRun) -> None:
        """Send ``run``'s stage chain to the broker."""
        ...

    def publish_delivery(self, turn_id: str, scope: str | None) -> None:
        """Send a finished turn's deliver task to the ``outbound`` queue."""
        ...

    def enqueue_turn(
        self, channel: str, raw_event: Any, *, bot: str | None = None, deliver: bool = True
    ) -> TurnHandle:
        """Submit a platform event as a turn with this process's deps."""
        ...

    def republish_stuck(self) -> list[str]:
        """Publish pending turns and re-publish stuck ones (the sweeper's turn half)."""
        ...

    def republish_deliveries(self) -> list[str]:
        """Re-publish stalled deliveries (the sweeper's delivery half)."""
        ...

    def dispatch_rereview(self, job_id: int, batch_nos: Sequence[int], mode: str) -> object:
        """Publish a re-review job's batches on the ``review`` queue."""
        ...

    def embedded_worker(self, settings: Settings) -> AbstractContextManager[TurnDeps]:
        """An in-process worker over an in-memory broker for the block (deps for ``settings``)."""
        ...

    def run_demo(self, console: Console | None = None) -> None:
        """Run the scripted role-play end to end (``nekoflow demo``)."""
        ...


_lock = threading.Lock()
_queue: TaskQueue | None = None


def register(queue: TaskQueue | None) -> None:
    """Make ``queue`` the one :func:`task_queue` returns (None: load the default again)."""
    global _queue
    with _lock:
        _queue = queue


def task_queue() -> TaskQueue:
    """The registered task queue, importing the Celery app (which registers itself) if none."""
    if _queue is None:
        importlib.import_module(WORKER_APP)
    if _queue is None:
        raise RuntimeError(f"{WORKER_APP} was imported but registered no task queue")
    return _queue


def broker_configured() -> bool:
    """True when the user pointed nekoflow at a real broker (``NEKOFLOW_BROKER_URL``)."""
    return bool(os.environ.get("NEKOFLOW_BROKER_URL"))
