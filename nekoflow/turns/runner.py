"""Running a stage and deciding what happens next: continue, stop, retry later, or fail.

``execute_stage`` is the one place that maps a stage's outcome to a decision; the Celery tasks
and the inline runner (tests, ``nekoflow turn --inline``) both use it, so they behave alike.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import ValidationError

from nekoflow.debuglog import debug_detail
from nekoflow.errors import InputError
from nekoflow.llm.base import LLMError
from nekoflow.redact import safe_error
from nekoflow.storage.turns import STAGES, TurnRun
from nekoflow.turns import store
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.errors import (
    LLMAttemptFailed,
    StageBusy,
    TurnFailed,
    TurnNotRunnable,
    TurnSkipped,
)
from nekoflow.turns.heartbeat import TurnHeartbeat
from nekoflow.turns.retry import backoff_delay, should_retry
from nekoflow.turns.stages import STAGE_FUNCS, fail_turn, skip_turn

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What to do after running a stage once."""

    kind: Literal["ok", "stop", "retry", "failed"]
    reason: str = ""
    delay: float = 0.0
    #: The turn's run row as the stage last read it (None when it read none).
    run: TurnRun | None = field(default=None, compare=False, repr=False)
    #: What the stage returned (``ok`` only).
    result: Any = field(default=None, compare=False, repr=False)


def execute_stage(deps: TurnDeps, stage: str, turn_id: str, *, attempt: int = 1) -> Outcome:
    """Run ``stage`` of ``turn_id`` (attempt ``attempt`` of this chain, counting from 1).

    - ``ok``: the stage completed (or had completed before).
    - ``stop``: the turn is not runnable now (finished, or waiting behind an earlier turn of
      its scope): end this chain without error.
    - ``retry``: a retryable failure (LLM timeout/429/5xx, a database or Redis hiccup), or
      another chain of the turn is calling the model right now; run the stage again after
      ``delay`` seconds.
    - ``failed``: the turn has been ended as failed (user line kept, no deltas, failure reply).

    LLM attempts are counted per turn (stored on the TurnRun), not per chain. Every reason is
    built by :func:`nekoflow.redact.safe_error` — class, status and field names, never an
    error's message, which may quote the user; the detail goes to the opt-in debug log.
    """
    token = store.STAGE_COUNTED.set(False)
    run_token = store.STAGE_RUN.set(None)
    try:
        return replace(_execute(deps, stage, turn_id, attempt), run=store.STAGE_RUN.get())
    finally:
        store.STAGE_RUN.reset(run_token)
        if not store.STAGE_COUNTED.get():  # stored nothing: count this execution separately
            try:
                store.count_stage_run(deps.engine, turn_id, stage)
            except Exception as exc:  # bookkeeping never stops a stage
                log.warning("turn %s: could not count %s (%s)", turn_id, stage, safe_error(exc))
        store.STAGE_COUNTED.reset(token)


def _execute(deps: TurnDeps, stage: str, turn_id: str, attempt: int) -> Outcome:
    settings = deps.settings
    try:
        # the turn's updated_at moves while the stage runs: the sweeper leaves it alone
        with TurnHeartbeat(deps.engine, turn_id, lease_seconds=settings.turn_lease_seconds):
            return Outcome("ok", result=STAGE_FUNCS[stage](deps, turn_id))
    except TurnNotRunnable as exc:
        return Outcome("stop", reason=str(exc))
    except StageBusy as exc:
        delay = min(max(exc.wait_seconds, 0.2), settings.llm_lease_seconds)
        return Outcome("retry", reason=exc.reason, delay=delay)
    except TurnSkipped as exc:
        skip_turn(deps, turn_id, exc.reason)
        return Outcome("stop", reason=exc.reason)
    except TurnFailed as exc:
        reason = f"{stage}: {exc.reason}"
    except LLMAttemptFailed as failed:
        exc, turn_attempt = failed.error, failed.attempt
        debug_detail(f"turn {turn_id} {stage} attempt {turn_attempt}", exc)
        if should_retry(exc, turn_attempt, settings.llm_max_attempts):
            delay = backoff_delay(
                turn_attempt,
                base=settings.llm_backoff_base,
                cap=settings.llm_backoff_max,
                error=exc if isinstance(exc, LLMError) else None,
            )
            return Outcome("retry", reason=safe_error(exc), delay=delay)
        reason = f"{stage}: LLM call failed after {turn_attempt} attempt(s): {safe_error(exc)}"
    except (InputError, ValidationError) as exc:
        # Bad data inside the turn (never a reason to crash or to retry forever).
        debug_detail(f"turn {turn_id} {stage}: invalid data", exc)
        reason = f"{stage}: invalid data: {safe_error(exc)}"
    except Exception as exc:
        debug_detail(f"turn {turn_id} {stage} attempt {attempt}", exc)
        if attempt < settings.stage_max_attempts:
            log.warning(
                "turn %s: %s failed (attempt %d, %s), retrying",
                turn_id,
                stage,
                attempt,
                safe_error(exc),
            )
            delay = backoff_delay(attempt, base=0.5, cap=settings.llm_backoff_max)
            return Outcome("retry", reason=safe_error(exc), delay=delay)
        log.error("turn %s: %s failed %d times (%s)", turn_id, stage, attempt, safe_error(exc))
        reason = f"{stage}: {safe_error(exc)}"
    fail_turn(deps, turn_id, reason)
    return Outcome("failed", reason=reason)


def run_inline(deps: TurnDeps, turn_id: str, *, sleep: bool = True) -> str:
    """Run every stage of a turn in this process, with the same retry rules as the workers.

    Returns the final outcome kind of the chain ("ok", "stop" or "failed").
    """
    for stage in STAGES:
        attempt = 1
        while True:
            outcome = execute_stage(deps, stage, turn_id, attempt=attempt)
            if outcome.kind != "retry":
                break
            attempt += 1
            if sleep:
                time.sleep(outcome.delay)
        if outcome.kind != "ok":
            return outcome.kind
    return "ok"
