"""Running one batch of a re-review job: load (SQL), review (pure core), write (bulk, one
transaction with the batch's done mark). Used by the Celery task and the embedded path alike."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from nekoflow.errors import InputError
from nekoflow.llm.base import ChatModel
from nekoflow.redact import safe_error
from nekoflow.rereview import store
from nekoflow.rereview.core import (
    Reviewer,
    SaveOutcome,
    extract_turns,
    review_save,
    reviewer_version,
)
from nekoflow.rereview.ratelimit import IntervalLimiter, RateLimiter
from nekoflow.review.autostate import InMemoryAutoState
from nekoflow.review.models import ReviewInput, ReviewOutput
from nekoflow.review.pipeline import ReviewPipeline
from nekoflow.review.rules import DEFAULT_KEYWORDS, run_rule_review
from nekoflow.settings import Settings
from nekoflow.storage.rereview import JobStatus, ReviewJob
from nekoflow.usage.meter import MeteredChatModel, metered
from nekoflow.usage.store import add_usage

log = logging.getLogger(__name__)

ProgressFn = Callable[[dict[str, Any]], None]


@dataclass
class ReviewerSpec:
    """How to build a job's reviewer in this process: mode, settings, optional model/limiter."""

    mode: str
    settings: Settings
    llm: ChatModel | None = None
    limiter: RateLimiter | None = None

    def version(self) -> str:
        """The reviewer version this process would write (must equal the job's)."""
        model = self.settings.llm_model if self.mode == "llm" else None
        return reviewer_version(self.mode, DEFAULT_KEYWORDS, model)

    def build(self) -> Reviewer:
        """A reviewer: the rule review directly (rule), or the LLM pipeline behind the limiter
        (llm, which falls back to the rules per turn and records why)."""
        autostate = InMemoryAutoState()  # deterministic: no live AutoState scores leak in
        if self.mode == "rule":
            return partial(run_rule_review, keywords=DEFAULT_KEYWORDS, autostate=autostate)
        if self.mode != "llm":
            raise InputError(f"mode must be rule or llm, got {self.mode!r}", field="mode")
        if self.llm is None:
            from nekoflow.llm.factory import make_chat_model

            self.llm = make_chat_model(self.settings)
        pipeline = ReviewPipeline(mode="llm", llm=MeteredChatModel(self.llm), autostate=autostate)
        limiter = self.limiter or IntervalLimiter(self.settings.rereview_llm_rate_per_second)

        def review(inp: ReviewInput) -> ReviewOutput:
            limiter.acquire()
            return pipeline.run(inp)

        return review


def review_saves(
    saves: Sequence[tuple[int, int, str, dict[str, int], list[Any]]],
    runs: dict[str, Any],
    reviewer: Reviewer,
    *,
    version: str,
    job_id: int,
    recent_limit: int,
    on_save: Callable[[SaveOutcome], None] | None = None,
) -> list[SaveOutcome]:
    """Extract and review each loaded save (pure work; no database access)."""
    outcomes = []
    for save_id, role_id, scope_id, initial, path in saves:
        ext = extract_turns(save_id, role_id, scope_id, path)
        outcome = review_save(
            ext.turns,
            initial,
            reviewer,
            version=version,
            job_id=job_id,
            runs=runs,
            recent_limit=recent_limit,
            save=(save_id, role_id, scope_id),
        )
        outcome.unanswered = ext.unanswered
        outcomes.append(outcome)
        if on_save is not None:
            on_save(outcome)
    return outcomes


def tally(outcomes: Sequence[SaveOutcome], written: int) -> dict[str, Any]:
    """The batch row's counters and per-save summaries."""
    return {
        "turns": sum(o.replay.turns for o in outcomes),
        "written": written,
        "skipped": sum(o.skipped for o in outcomes),
        "unanswered": sum(o.unanswered for o in outcomes),
        "memories": sum(o.memories for o in outcomes),
        "plots": sum(o.plots for o in outcomes),
        "fallbacks": sum(o.fallbacks for o in outcomes),
        "scopes": {str(o.save_id): o.summary() for o in outcomes},
    }


def run_batch(
    engine: Engine,
    job_id: int,
    batch_no: int,
    spec: ReviewerSpec,
    *,
    progress: ProgressFn | None = None,
) -> dict[str, Any]:
    """Re-review one batch and commit its records with its done mark; returns its tally.

    A batch already done (a redelivered task, a resumed job) returns at once, writing nothing.
    A failure marks the batch failed (resumable) and re-raises.
    """
    try:
        return _run_batch(engine, job_id, batch_no, spec, progress)
    except Exception as exc:
        store.fail_batch(engine, job_id, batch_no, safe_error(exc))
        raise


def _run_batch(
    engine: Engine, job_id: int, batch_no: int, spec: ReviewerSpec, progress: ProgressFn | None
) -> dict[str, Any]:
    with Session(engine) as s:
        job = s.get(ReviewJob, job_id)
        batch = store.load_batch(s, job_id, batch_no)
        if job is None or batch is None:
            raise InputError(f"no batch {batch_no} of re-review job {job_id}", field="batch_no")
        if batch.status == JobStatus.done:
            store.finish_if_complete(engine, job_id)
            return {"job_id": job_id, "batch_no": batch_no, "already_done": True}
        store.start_batch(engine, job_id, batch_no)
        version, dry_run = job.reviewer_version, job.dry_run
        if spec.version() != version:
            raise InputError(
                f"this worker's reviewer is {spec.version()}, the job's is {version}: "
                "deploy the same rules everywhere",
                field="reviewer_version",
            )
        saves = store.load_saves(s, batch.save_ids)
        turn_ids = [ln.turn_id for *_, path in saves for ln in path if ln.turn_id]
        runs = store.load_runs(s, turn_ids) if turn_ids else {}
    total = batch.estimated_turns
    seen = [0]

    def on_save(outcome: SaveOutcome) -> None:
        seen[0] += outcome.replay.turns
        if progress is not None:
            progress({"job_id": job_id, "batch_no": batch_no, "done": seen[0], "total": total})

    recent = spec.settings.recent_message_limit if spec.mode == "llm" else 0
    with metered() as calls:  # LLM-mode re-reviews are paid for: count them
        outcomes = review_saves(
            saves,
            runs,
            spec.build(),
            version=version,
            job_id=job_id,
            recent_limit=recent,
            on_save=on_save,
        )
    records = [r for o in outcomes for r in o.records]
    with Session(engine) as s:
        written = 0 if dry_run else store.insert_records(s, records)
        counts = tally(outcomes, written)
        finished = store.finish_batch(s, job_id, batch_no, counts)
        if finished:
            add_usage(s, calls, kind="rereview", turn_id=f"rereview:{job_id}:{batch_no}")
        s.commit()
    store.finish_if_complete(engine, job_id)
    return {
        "job_id": job_id,
        "batch_no": batch_no,
        "turns": counts["turns"],
        "written": written if finished else 0,
        "already_done": not finished,
    }


def run_inline(
    engine: Engine,
    job_id: int,
    batch_nos: Sequence[int],
    spec: ReviewerSpec,
    stop: threading.Event | None = None,
) -> None:
    """Run the batches one after another in this process (the embedded path: no broker)."""
    for batch_no in batch_nos:
        if stop is not None and stop.is_set():
            return
        run_batch(engine, job_id, batch_no, spec)
