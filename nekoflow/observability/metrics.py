"""Prometheus metrics of nekoflow: the series, the observer that feeds them, the exposition.

Multiprocess mode: when ``PROMETHEUS_MULTIPROC_DIR`` is set (before the process starts) every
process — API workers, Celery's prefork children — writes its samples to files in that
directory and :func:`exposition` aggregates them, so one scrape of ``GET /metrics`` on an API
that shares the directory with the workers sees the whole host. Without it each process exposes
only its own samples. Labels are bounded: channel, stage, queue, status, skip reason code,
model, outcome — never a turn, scope, user id or any text.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # must exist before the first series is made
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client import REGISTRY as DEFAULT_REGISTRY

from nekoflow.observability import hooks
from nekoflow.prices import Price, cost

STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
"""Buckets of stage latency, queue wait and LLM latency (seconds)."""

TURNS = Counter(
    "nekoflow_turns",
    "Turns by channel and final status; reason is the skip code (rate_limited, busy, stale, "
    "quota_exceeded, disabled, not_triggered...), empty for other statuses.",
    ["channel", "status", "reason"],
)
STAGE_SECONDS = Histogram(
    "nekoflow_stage_duration_seconds",
    "Wall time of one execution of a turn stage task, by outcome (ok, stopped, retry, failed).",
    ["stage", "outcome"],
    buckets=STAGE_BUCKETS,
)
QUEUE_WAIT = Histogram(
    "nekoflow_queue_wait_seconds",
    "Time a task message waited in its queue: published (or due, for a countdown) to started.",
    ["stage", "queue"],
    buckets=STAGE_BUCKETS,
)
TASK_RETRIES = Counter(
    "nekoflow_task_retries", "Retries scheduled by nekoflow tasks, by stage.", ["stage"]
)
LLM_SECONDS = Histogram(
    "nekoflow_llm_call_duration_seconds",
    "Wall time of the reply stage's chat-model call, by model and outcome.",
    ["model", "outcome"],
    buckets=STAGE_BUCKETS,
)
LLM_TOKENS = Counter(
    "nekoflow_llm_tokens",
    "Tokens kept for turns, by model, kind of call (reply, review) and type (prompt, completion).",
    ["model", "kind", "type"],
)
LLM_COST = Counter(
    "nekoflow_llm_cost",
    "Cost of the kept usage in the operator's currency (models with a NEKOFLOW_LLM_PRICES entry).",
    ["model", "kind"],
)
DELIVERIES = Counter(
    "nekoflow_deliveries",
    "Deliver task runs by result (done, failed, waiting, retry).",
    ["result"],
)
PROACTIVE = Counter(
    "nekoflow_proactive",
    "Proactive schedules the sweep handled, by kind (follow_up, reminder) and outcome (fired: "
    "its turn started; later: quiet hours; dropped: the user wrote, K unanswered, a quota...).",
    ["kind", "outcome"],
)
SWEEPER_REPUBLISHED = Counter(
    "nekoflow_sweeper_republished", "Turns and deliveries the sweeper published again."
)
WORKER_HEARTBEAT = Gauge(
    "nekoflow_worker_heartbeat_timestamp_seconds",
    "Unix time a Celery worker last said it is alive (max over the workers sharing the scrape).",
    multiprocess_mode="max",
)

_CODE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def reason_label(status: str, reason: str | None) -> str:
    """The bounded reason label: a skip's short code as is, ``other`` for anything else a skip
    carries, empty for the other statuses (a failure's reason is free text)."""
    if status != "skipped" or not reason:
        return ""
    code = reason.strip().lower().replace(" ", "_")
    return code if _CODE.match(code) else "other"


def model_label(model: str) -> str:
    """A model name as a label (operators configure a handful; anything odd is cut)."""
    return (model or "unknown")[:64]


class PrometheusObserver:
    """Feeds the pipeline's reports (:mod:`nekoflow.observability.hooks`) into the series."""

    def __init__(self, prices: Mapping[str, Price] | None = None) -> None:
        self.prices = dict(prices or {})

    def turn_ended(self, channel: str, status: str, reason: str | None, *_: object) -> None:
        """Count a turn's final status."""
        TURNS.labels(channel or "unknown", status, reason_label(status, reason)).inc()

    def llm_call(self, model: str, seconds: float, outcome: str) -> None:
        """Observe a chat-model call's wall time."""
        LLM_SECONDS.labels(model_label(model), outcome[:40]).observe(max(seconds, 0.0))

    def proactive(self, kind: str, outcome: str) -> None:
        """Count one schedule the proactive sweep handled."""
        PROACTIVE.labels(kind, outcome).inc()

    def usage(self, kind: str, entries: Sequence[tuple[str, int, int]]) -> None:
        """Count kept tokens, and their cost when the model has a price."""
        for model, prompt, completion in entries:
            name = model_label(model)
            LLM_TOKENS.labels(name, kind, "prompt").inc(max(prompt, 0))
            LLM_TOKENS.labels(name, kind, "completion").inc(max(completion, 0))
            price = cost(self.prices, model, prompt, completion)
            if price is not None:
                LLM_COST.labels(name, kind).inc(price)


_observer: PrometheusObserver | None = None


def install(prices: Mapping[str, Price] | None = None) -> PrometheusObserver:
    """Register the Prometheus observer for this process (idempotent; prices may be updated)."""
    global _observer
    if _observer is None:
        _observer = PrometheusObserver(prices)
        hooks.register(_observer)
    elif prices is not None:
        _observer.prices = dict(prices)
    return _observer


def multiprocess_dir() -> str | None:
    """The multiprocess directory in use, if any."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def multiprocess_registry(directory: str) -> CollectorRegistry:
    """A registry aggregating the multiprocess directory's files, skipping any a process is
    still creating (a scrape racing a worker's start read a 0-byte file and failed)."""
    from prometheus_client import multiprocess

    class _Ready(multiprocess.MultiProcessCollector):
        """The multiprocess collector over the files that hold at least their header."""

        def collect(self) -> Any:
            files = glob.glob(os.path.join(directory, "*.db"))
            ready = [f for f in files if _size(f) >= _HEADER]
            return self.merge(ready, accumulate=True)

    registry = CollectorRegistry()
    _Ready(registry, path=directory)
    return registry


_HEADER = 8
"""Bytes an initialised multiprocess file starts with (its used size and padding)."""


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:  # removed meanwhile (mark_process_dead)
        return 0


def exposition() -> tuple[bytes, str]:
    """The text exposition of every series (aggregated over the multiprocess directory when
    one is set) and its content type."""
    directory = multiprocess_dir()
    if directory:
        return generate_latest(multiprocess_registry(directory)), CONTENT_TYPE_LATEST
    return generate_latest(DEFAULT_REGISTRY), CONTENT_TYPE_LATEST
