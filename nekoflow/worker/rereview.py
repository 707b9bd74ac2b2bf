"""Celery tasks of the bulk re-review (queue ``review``): thin wrappers over
:mod:`nekoflow.rereview.runner`. A job's batches fan out as one ``group``, one task per batch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from celery import Task, group

from nekoflow.rereview.runner import ReviewerSpec, run_batch
from nekoflow.settings import get_settings
from nekoflow.storage import get_engine
from nekoflow.worker.app import app


def _limiter() -> Any:
    """The cluster-wide LLM rate limiter (Redis), per the rereview_llm_rate_per_second setting."""
    from nekoflow.redis_client import make_redis
    from nekoflow.rereview.ratelimit_redis import RedisRateLimiter

    settings = get_settings()
    return RedisRateLimiter(
        make_redis(settings.redis_url),
        settings.redis_key("rereview", "llm-rate"),
        settings.rereview_llm_rate_per_second,
    )


@app.task(bind=True, name="nekoflow.rereview.batch", acks_late=True)
def rereview_batch(self: Task, job_id: int, batch_no: int, mode: str) -> dict[str, Any]:
    """Re-review one batch of a job; reports PROGRESS states and task-progress events (Flower)."""

    def progress(meta: dict[str, Any]) -> None:
        if self.request.id:
            self.update_state(state="PROGRESS", meta=meta)
            self.send_event("task-progress", **meta)

    settings = get_settings()
    spec = ReviewerSpec(mode=mode, settings=settings, limiter=_limiter() if mode == "llm" else None)
    return run_batch(get_engine(), job_id, batch_no, spec, progress=progress)


def dispatch(job_id: int, batch_nos: Sequence[int], mode: str) -> Any:
    """Publish the batches as one group on the ``review`` queue."""
    return group(rereview_batch.s(job_id, n, mode) for n in batch_nos).apply_async()
