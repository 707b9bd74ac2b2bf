"""The Celery app's :class:`~nekoflow.taskqueue.TaskQueue`: what the library's edges call."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from rich.console import Console

from nekoflow.settings import Settings
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.handle import TurnHandle


def _module(name: str) -> Any:
    """The worker module ``name``, read at call time (so a test's patch of it is honoured)."""
    return importlib.import_module(f"nekoflow.worker.{name}")


class CeleryTaskQueue:
    """Each operation delegates to the worker module that owns it."""

    def get_deps(self) -> TurnDeps:
        """This process's TurnDeps (``nekoflow.worker.runtime``)."""
        return _module("runtime").get_deps()

    def publish_turn(self, run: TurnRun) -> None:
        """Send ``run``'s chain to the broker."""
        _module("turns").publish_turn(run)

    def publish_delivery(self, turn_id: str, scope: str | None) -> None:
        """Send the turn's deliver task to ``outbound``."""
        _module("deliver").publish_delivery(turn_id, scope)

    def enqueue_turn(
        self, channel: str, raw_event: Any, *, bot: str | None = None, deliver: bool = True
    ) -> TurnHandle:
        """Submit a platform event as a turn."""
        return _module("turns").enqueue_turn(channel, raw_event, bot=bot, deliver=deliver)

    def republish_stuck(self) -> list[str]:
        """Publish pending turns and re-publish stuck ones."""
        return _module("turns").republish_stuck()

    def republish_deliveries(self) -> list[str]:
        """Re-publish stalled deliveries."""
        return _module("deliver").republish_deliveries()

    def dispatch_rereview(self, job_id: int, batch_nos: Sequence[int], mode: str) -> object:
        """Publish the job's batches as one group on ``review``."""
        return _module("rereview").dispatch(job_id, batch_nos, mode)

    def embedded_worker(self, settings: Settings) -> AbstractContextManager[TurnDeps]:
        """An in-process worker for the block."""
        cm: AbstractContextManager[TurnDeps] = _module("embedded").embedded_worker(settings)
        return cm

    def run_demo(self, console: Console | None = None) -> None:
        """The scripted role-play."""
        _module("demo").run_demo(console)
