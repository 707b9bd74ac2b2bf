"""The queues nekoflow's tasks run on: the Celery routes the worker's configuration uses and
``nekoflow doctor`` checks (plain data, so the library needs no Celery to read them)."""

from __future__ import annotations

DEFAULT_QUEUE = "turns"
"""Where a task without a route goes."""

TASK_ROUTES: dict[str, dict[str, str]] = {
    "nekoflow.turn.llm_call": {"queue": "llm"},
    "nekoflow.turn.deliver": {"queue": "outbound"},
    "nekoflow.turn.typing": {"queue": "outbound"},
    "nekoflow.speech.sweep": {"queue": "turns"},
    "nekoflow.speech.*": {"queue": "speech"},
    "nekoflow.turn.*": {"queue": "turns"},
    "nekoflow.sweep": {"queue": "turns"},
    "nekoflow.proactive.*": {"queue": "turns"},
    "nekoflow.rereview.*": {"queue": "review"},
    "nekoflow.memory.*": {"queue": "memory"},
}
"""Task name (glob) → queue, first match wins (Celery's ``task_routes``)."""

WORKER_APP = "nekoflow.worker"
"""The Celery app's module, as ``celery -A`` takes it."""
