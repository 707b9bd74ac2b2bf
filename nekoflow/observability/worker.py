"""Celery middleware: task signals feed the metrics (and traces) of every nekoflow task.

Imported once by ``nekoflow.worker``, so no stage contains measuring code. Before a task
message is published it gets a ``nekoflow_published`` header (Unix time); when a worker starts
the task the wait since then (or since its countdown fell due) is the queue wait; prerun →
postrun is the stage latency, by outcome (``ok``, ``stopped``, ``retry``, ``failed``), and,
with ``NEKOFLOW_TRACING`` on, the stage's span in the turn's trace (:mod:`.tracing`).
The deliver task's results and the sweeper's re-publications are read from their return values.
A worker's main process refreshes ``nekoflow_worker_heartbeat_timestamp_seconds`` and, with
``NEKOFLOW_METRICS_PORT`` set, serves ``/metrics`` itself (for workers on other hosts).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from datetime import datetime
from typing import Any

from celery.signals import (
    before_task_publish,
    task_failure,
    task_postrun,
    task_prerun,
    task_retry,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
)

from nekoflow.observability import metrics, tracing

log = logging.getLogger(__name__)

PUBLISHED_HEADER = "nekoflow_published"
"""Message header carrying the Unix time the task message was published."""

HEARTBEAT_SECONDS = 10.0
"""How often a worker's main process refreshes its heartbeat gauge."""

_started: dict[str, tuple[float, str, Any]] = {}
_failed: set[str] = set()


def stage_of(task_name: str | None) -> str | None:
    """The bounded stage label of a nekoflow task name (None for other tasks)."""
    if not task_name or not task_name.startswith("nekoflow."):
        return None
    name = task_name.removeprefix("nekoflow.")
    return name.removeprefix("turn.")


def _install_observer() -> None:
    try:
        from nekoflow.settings import get_settings

        metrics.install(get_settings().llm_prices)
    except Exception as exc:  # bad settings are reported by the worker's own start-up
        log.warning("metrics: prices unavailable (%s)", type(exc).__name__)
        metrics.install()


def _due_time(request: Any) -> float | None:
    """When the message could first run: its publish time, or its ETA when later."""
    headers = getattr(request, "headers", None) or {}
    published = getattr(request, PUBLISHED_HEADER, None) or headers.get(PUBLISHED_HEADER)
    if published is None:
        return None
    try:
        due = float(published)
    except (TypeError, ValueError):
        return None
    eta = getattr(request, "eta", None)
    if eta:
        with contextlib.suppress(ValueError):
            due = max(due, datetime.fromisoformat(str(eta)).timestamp())
    return due


@before_task_publish.connect
def _stamp(sender: str | None = None, headers: dict[str, Any] | None = None, **_: Any) -> None:
    if headers is not None and stage_of(sender) is not None:
        headers.setdefault(PUBLISHED_HEADER, time.time())


@task_prerun.connect
def _prerun(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    stage = stage_of(getattr(task, "name", None))
    if stage is None or task_id is None:
        return
    request = getattr(task, "request", None)
    info = getattr(request, "delivery_info", None) or {}
    queue = str(info.get("routing_key") or info.get("queue") or "unknown")[:40]
    due = _due_time(request)
    if due is not None:
        metrics.QUEUE_WAIT.labels(stage, queue).observe(max(time.time() - due, 0.0))
    span = None
    args = list(getattr(request, "args", None) or [])
    if task.name.startswith("nekoflow.turn.") and args and isinstance(args[0], str):
        attributes = {
            "celery.task_id": task_id,
            "messaging.destination.name": queue,
            "nekoflow.attempt": int(getattr(request, "retries", 0) or 0) + 1,
        }
        span = tracing.start_stage(args[0], stage, attributes)
    _started[task_id] = (time.monotonic(), stage, span)


@task_failure.connect
def _failure(task_id: str | None = None, **_: Any) -> None:
    if task_id is not None:
        _failed.add(task_id)


@task_retry.connect
def _retry(sender: Any = None, **_: Any) -> None:
    stage = stage_of(getattr(sender, "name", None))
    if stage is not None:
        metrics.TASK_RETRIES.labels(stage).inc()


def _outcome(state: str | None, retval: Any, failed: bool) -> str:
    if failed or state == "FAILURE":
        return "failed"
    if state == "RETRY":
        return "retry"
    if isinstance(retval, dict) and retval.get("status") == "stopped":
        return "stopped"
    return "ok"


@task_postrun.connect
def _postrun(
    task_id: str | None = None,
    task: Any = None,
    retval: Any = None,
    state: str | None = None,
    **_: Any,
) -> None:
    if task_id is None:
        return
    started = _started.pop(task_id, None)
    failed = task_id in _failed
    _failed.discard(task_id)
    if started is None:
        return
    t0, stage, span = started
    outcome = _outcome(state, retval, failed)
    metrics.STAGE_SECONDS.labels(stage, outcome).observe(time.monotonic() - t0)
    if span is not None:
        tracing.end_stage(span, outcome)
    if stage == "deliver":
        result = "retry" if outcome == "retry" else "failed" if outcome == "failed" else None
        if result is None and isinstance(retval, dict):
            result = str(retval.get("status") or "done")[:20]
        metrics.DELIVERIES.labels(result or "done").inc()
    elif stage == "sweep" and isinstance(retval, list) and retval:
        metrics.SWEEPER_REPUBLISHED.inc(len(retval))


def _beat_forever() -> None:
    while True:
        metrics.WORKER_HEARTBEAT.set(time.time())
        time.sleep(HEARTBEAT_SECONDS)


def serve_metrics(port: int) -> None:
    """Serve this host's metrics on ``port`` (aggregated over the multiprocess directory)."""
    from prometheus_client import start_http_server

    directory = metrics.multiprocess_dir()
    if directory:
        start_http_server(port, registry=metrics.multiprocess_registry(directory))
    else:
        start_http_server(port)


@worker_ready.connect
def _ready(**_: Any) -> None:
    _install_observer()
    threading.Thread(target=_beat_forever, name="nekoflow-heartbeat", daemon=True).start()
    port = os.environ.get("NEKOFLOW_METRICS_PORT")
    if port:
        try:
            serve_metrics(int(port))
        except (ValueError, OSError) as exc:
            log.error("NEKOFLOW_METRICS_PORT=%r: cannot serve metrics (%s)", port, exc)


@worker_process_init.connect
def _child(**_: Any) -> None:
    _install_observer()


@worker_process_shutdown.connect
@worker_shutdown.connect
def _flush_traces(**_: Any) -> None:
    tracing.shutdown()  # flush the spans still batched


_install_observer()
