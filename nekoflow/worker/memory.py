"""The ``memory`` queue: ``nekoflow.memory.summarize`` summarises a save's history beyond the
window; ``nekoflow.memory.embed`` fills the vectors of a save's memories when an embeddings
endpoint is configured. Arguments are ids only (the save), never text; both tasks are
idempotent (summaries are keyed by span, a memory is embedded while it lacks a vector) and never
part of a turn's chain, so a slow or failed one blocks no turn."""

from __future__ import annotations

from typing import Any

from celery import Task
from celery.utils.log import get_task_logger

from nekoflow.llm.base import ChatModel
from nekoflow.memory.embeddings import EmbeddingsError, configured_embedder
from nekoflow.memory.settings import get_memory_settings
from nekoflow.memory.summaries import summarize_save
from nekoflow.memory.vectors import embed_save
from nekoflow.turns import store
from nekoflow.worker.app import app
from nekoflow.worker.runtime import get_deps

log = get_task_logger(__name__)

QUEUE = "memory"


def _model() -> ChatModel | None:
    """The chat model for summaries (``NEKOFLOW_MEMORY_SUMMARY_MODE``), or None: the rules."""
    mode = get_memory_settings().summary_mode
    deps = get_deps()
    if mode == "llm" or (mode == "auto" and deps.settings.effective_llm_provider == "openai"):
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
    if written and configured_embedder() is not None:
        embed.apply_async((save_id,), queue=QUEUE)  # the new summaries get their vectors
    return {"save_id": save_id, "summaries": written}


@app.task(
    name="nekoflow.memory.embed",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    max_retries=5,
)
def embed(self: Task, save_id: int) -> dict[str, Any]:
    """Store the vectors the save's live memories lack (``NEKOFLOW_MEMORY_EMBEDDINGS_*``)."""
    embedder = configured_embedder()
    if embedder is None:
        return {"save_id": save_id, "embedded": 0}
    try:
        stored = embed_save(get_deps().engine, embedder, save_id)
    except Exception as exc:  # the endpoint or the database: later; the work is idempotent
        reason = str(exc) if isinstance(exc, EmbeddingsError) else type(exc).__name__
        log.warning("embedding memories of save %s failed (%s)", save_id, reason)
        raise self.retry(countdown=60, exc=EmbeddingsError(reason)) from None
    return {"save_id": save_id, "embedded": stored}


def after_apply(turn_id: str, results: dict[str, dict[str, Any]] | None = None) -> None:
    """After a turn applied: publish the summary task when apply found it due (never raises).
    ``results``: the turn's stored stage results when the caller has read them."""
    try:
        if results is None:
            results = store.load_turn(get_deps().engine, turn_id)[1]
        result = results.get("apply_deltas") or {}
        dispatch = results.get("dispatch") or {}
        save_id = dispatch.get("save_id")
        if not isinstance(save_id, int):
            return
        if result.get("summarize"):
            summarize.apply_async((save_id,), queue=QUEUE)
        if result.get("memories") and configured_embedder() is not None:
            embed.apply_async((save_id,), queue=QUEUE)
    except Exception as exc:  # a missed task is caught up after a later turn of the scope
        log.warning("turn %s: memory task not enqueued (%s)", turn_id, type(exc).__name__)
