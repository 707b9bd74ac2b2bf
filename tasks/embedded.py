"""The embedded mode: the real turn chain on an in-process worker over Celery's in-memory
transport — no Redis, no separate worker, nothing to install (the demo and ``nekoflow turn``)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

from celery.contrib.testing.worker import start_worker

from nekoflow.settings import Settings
from nekoflow.turns.deps import TurnDeps
from tasks.app import app
from tasks.runtime import set_deps
from tasks.turns import publish_turn


def broker_configured() -> bool:
    """True when the user pointed nekoflow at a real broker (``NEKOFLOW_BROKER_URL``)."""
    return bool(os.environ.get("NEKOFLOW_BROKER_URL"))


@contextmanager
def embedded_worker(settings: Settings, *, concurrency: int = 2) -> Iterator[TurnDeps]:
    """Run turns in this process: in-memory broker, in-process worker threads, the given
    settings' database; world-book cooldowns, AutoState and events stay in process."""
    settings = settings.model_copy(
        update={
            "broker_url": "memory://localhost/",
            "result_backend": "cache+memory://",
            "cooldown_backend": "memory",
            "event_bus": "memory",
            "autostate_backend": "memory",
        }
    )
    app.conf.update(
        broker_url="memory://localhost/",
        result_backend="cache+memory://",
        # kombu's virtual transports sleep polling_interval (1 s) whenever a queue is empty:
        # six stages per turn would spend six seconds asleep.
        broker_transport_options={"polling_interval": 0.01},
        worker_hijack_root_logger=False,
    )
    deps = TurnDeps.from_settings(settings, publish=publish_turn)
    set_deps(deps)
    logging.getLogger("celery").setLevel(logging.WARNING)
    try:
        with start_worker(
            app,
            pool="threads",
            concurrency=concurrency,
            perform_ping_check=False,
            loglevel="WARNING",
            queues=["turns", "llm"],
            shutdown_timeout=30,
        ):
            yield deps
    finally:
        set_deps(None)
