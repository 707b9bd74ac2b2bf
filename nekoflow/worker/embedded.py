"""The embedded mode: the real turn chain on an in-process worker over Celery's in-memory
transport — no Redis, no separate worker, nothing to install (the demo and ``nekoflow turn``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from celery.contrib.testing.worker import TestWorkController, setup_app_for_worker
from celery.utils.nodenames import anon_nodename
from celery.worker import state as worker_state

from nekoflow.settings import Settings
from nekoflow.taskqueue import broker_configured
from nekoflow.turns.deps import TurnDeps
from nekoflow.worker.app import app
from nekoflow.worker.runtime import set_deps
from nekoflow.worker.turns import publish_turn

__all__ = ["broker_configured", "embedded_worker"]

STOP_WAIT_SECONDS = 0.5
"""How long leaving the embedded worker waits for its thread (a daemon) to wind down."""


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
    # A one-shot command reports each turn's outcome (and a failed turn's reason) itself; the
    # workers' retry warnings and task tracebacks would only bury that under log noise.
    for name in ("celery", "tasks", "nekoflow"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        with _worker_thread(concurrency):
            yield deps
    finally:
        set_deps(None)


@contextmanager
def _worker_thread(concurrency: int) -> Iterator[None]:
    """A worker consuming ``turns`` and ``llm`` in a daemon thread of this process.

    Leaving the block asks it to stop and waits briefly: everything the caller waited for has
    finished, and the idle consumer loop would otherwise take seconds to notice (it drains the
    in-memory queues with a timeout), which a one-shot command should not make its user wait.
    """
    setup_app_for_worker(app, "WARNING", None)
    worker = TestWorkController(
        app=app,
        concurrency=concurrency,
        hostname=anon_nodename(),
        pool="threads",
        loglevel="WARNING",
        logfile=None,
        ready_callback=None,
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
        queues=["turns", "llm", "outbound", "memory", "speech"],
    )
    thread = threading.Thread(target=worker.start, name="nekoflow-embedded-worker", daemon=True)
    thread.start()
    worker.ensure_started()
    try:
        yield
    finally:
        worker_state.should_terminate = 0
        thread.join(STOP_WAIT_SECONDS)
        worker_state.should_terminate = None
