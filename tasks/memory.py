"""The ``memory`` queue: ``nekoflow.memory.summarize`` summarises a save's history beyond the
window. Arguments are ids only (the save), never text; the task is idempotent (summaries are
keyed by span) and never part of a turn's chain, so a slow or failed summary blocks no turn."""

from __future__ import annotations

from typing import Any

from celery import Task
from celery.utils.log import get_task_logger

from nekoflow.llm.base import ChatModel
from nekoflow.memory.settings import get_memory_settings
from nekoflow.memory.summaries import summarize_save
from nekoflow.storage import read_session
from nekoflow.turns import store
from tasks.app import app
from tasks.runtime import get_deps

log = get_task_logger(__name__)

QUEUE = "memory"


def _model() -> ChatModel | None:
    """The chat model for summaries (``NEKOFLOW_MEMORY_SUMMARY_MODE``), or None: the rules."""
    mode = get_memory_settings().summary_mode
    deps = get_deps()
    if mode == "llm" or (mode == "auto" and deps.settings.llm_provider == "openai"):
        return deps.chat_model
    return None


@app.task(
    name="nekoflow.memory.summarize",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    max_retries=3,
)
def summarize(self: Task, save_id: int) -> dict[str, Any]:
    """Summarise the save's oldest unsummarised spans outside the recent window."""
    try:
        written = summarize_save(get_deps().engine, save_id, get_memory_settings(), model=_model())
    except Exception as exc:  # a database hiccup: try again later, the spans are keyed
        log.warning("summary of save %s failed (%s)", save_id, type(exc).__name__)
        raise self.retry(countdown=30, exc=exc) from None
    return {"save_id": save_id, "summaries": written}


def after_apply(turn_id: str) -> None:
    """After a turn applied: publish the summary task when apply found it due (never raises)."""
    try:
        with read_session(get_deps().engine) as s:
            result = store.get_stage(s, turn_id, "apply_deltas") or {}
            dispatch = store.get_stage(s, turn_id, "dispatch") or {}
        save_id = dispatch.get("save_id")
        if result.get("summarize") and isinstance(save_id, int):
            summarize.apply_async((save_id,), queue=QUEUE)
    except Exception as exc:  # a missed summary is picked up after a later turn
        log.warning("turn %s: summary not enqueued (%s)", turn_id, type(exc).__name__)
