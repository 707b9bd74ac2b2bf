"""The proactive sweep task (``nekoflow.proactive.sweep``, run by beat): starts the due
follow-ups and reminders. Arguments are a time at most (tests inject the clock), never text."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from celery.utils.log import get_task_logger

from nekoflow.turns.proactive_sweep import sweep_due
from nekoflow.worker.app import app
from nekoflow.worker.runtime import get_deps

log = get_task_logger(__name__)


@app.task(name="nekoflow.proactive.sweep", acks_late=True, reject_on_worker_lost=True)
def proactive_sweep(now: str | None = None) -> dict[str, Any]:
    """Fire the schedules due at ``now`` (ISO 8601; the wall clock when absent)."""
    at = datetime.fromisoformat(now) if now else None
    if at is not None and at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    report = sweep_due(get_deps(), at)
    if report.fired:
        log.info("proactive sweep started %d turn(s): %s", len(report.fired), report.fired)
    return {"fired": report.fired, "later": report.later, "dropped": report.dropped}
