"""Running a stage and deciding what happens next: continue, stop, retry later, or fail.

``execute_stage`` is the one place that maps a stage's outcome to a decision; the Celery tasks
and the inline runner (tests, ``nekoflow turn --inline``) both use it, so they behave alike.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Literal

from pydantic import ValidationError

from nekoflow.errors import InputError
from nekoflow.llm.base import LLMError
from nekoflow.storage.turns import STAGES
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.errors import TurnFailed, TurnNotRunnable
from nekoflow.turns.retry import backoff_delay, should_retry
from nekoflow.turns.stages import STAGE_FUNCS, fail_turn

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What to do after running a stage once."""

    kind: Literal["ok", "stop", "retry", "failed"]
    reason: str = ""
    delay: float = 0.0


def execute_stage(deps: TurnDeps, stage: str, turn_id: str, *, attempt: int = 1) -> Outcome:
    """Run ``stage`` of ``turn_id`` (attempt ``attempt``, counting from 1).

    - ``ok``: the stage completed (or had completed before).
    - ``stop``: the turn is not runnable now (finished, or waiting behind an earlier turn of
      its scope): end this chain without error.
    - ``retry``: a retryable failure (LLM timeout/429/5xx, a database or Redis hiccup); run
      the stage again after ``delay`` seconds.
    - ``failed``: the turn has been ended as failed (user line kept, no deltas, failure reply).
    """
    settings = deps.settings
    try:
        STAGE_FUNCS[stage](deps, turn_id)
        return Outcome("ok")
    except TurnNotRunnable as exc:
        return Outcome("stop", reason=str(exc))
    except TurnFailed as exc:
        reason = f"{stage}: {exc.reason}"
    except LLMError as exc:
        if should_retry(exc, attempt, settings.llm_max_attempts):
            delay = backoff_delay(
                attempt, base=settings.llm_backoff_base, cap=settings.llm_backoff_max, error=exc
            )
            return Outcome("retry", reason=f"{type(exc).__name__}: {exc}", delay=delay)
        reason = f"{stage}: LLM call failed after {attempt} attempt(s): {type(exc).__name__}: {exc}"
    except (InputError, ValidationError) as exc:
        # Bad data inside the turn (never a reason to crash or to retry forever).
        reason = f"{stage}: invalid data: {exc}"
    except Exception as exc:
        if attempt < settings.stage_max_attempts:
            log.warning(
                "turn %s: %s failed (attempt %d), retrying", turn_id, stage, attempt, exc_info=True
            )
            delay = backoff_delay(attempt, base=0.5, cap=settings.llm_backoff_max)
            return Outcome("retry", reason=f"{type(exc).__name__}: {exc}", delay=delay)
        log.exception("turn %s: %s failed %d times", turn_id, stage, attempt)
        reason = f"{stage}: {type(exc).__name__}: {exc}"
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
