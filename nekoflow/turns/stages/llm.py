"""Stage 3, llm_call: one metered, leased call of the chat model per attempt."""

from __future__ import annotations

import logging
import time

from nekoflow.llm.base import LLMError
from nekoflow.llm.streaming import complete_streaming
from nekoflow.observability import hooks
from nekoflow.settings import Settings
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.errors import (
    LLMAttemptFailed,
    StageBusy,
    TurnFailed,
    TurnNotRunnable,
)
from nekoflow.turns.llm_lease import LeaseHeartbeat, claim_llm_call_in, release_llm_lease
from nekoflow.turns.models import (
    DispatchResult,
    LLMCallResult,
)
from nekoflow.turns.stages.common import (
    running_turn,
    save_result,
)
from nekoflow.turns.stages.prompt import turn_llm_messages
from nekoflow.turns.stream_publish import TokenWriter, publisher_for
from nekoflow.turns.usage import TurnUsage, check_quota
from nekoflow.usage.meter import UsageEntry

log = logging.getLogger(__name__)


def _token_writer(settings: Settings, turn_id: str, attempt: int) -> TokenWriter | None:
    """Where this attempt's reply tokens go (None: streaming off or no Redis)."""
    publisher = publisher_for(settings)
    return publisher.writer(turn_id, attempt) if publisher is not None else None


def llm_call(deps: TurnDeps, turn_id: str) -> LLMCallResult:
    """Ask the chat model once; a stored success is never asked again.

    Raises :class:`nekoflow.llm.LLMError` on failure (the caller retries retryable ones).
    """
    settings = deps.settings
    # One transaction: the turn, its prompt's history, and the claim on the call (at most one
    # call in flight per turn, counting the turn's attempt), committed before the call. Core
    # statements only: a plain Connection rather than a Session.
    with deps.engine.connect() as s:
        turn = running_turn(deps, turn_id, "llm_call", s)
        stored = turn.result("llm_call", LLMCallResult)
        if stored is not None:
            return stored
        messages = turn_llm_messages(deps, turn, s)
        d = turn.required("dispatch", DispatchResult)
        fallback = check_quota(
            deps, turn.run.channel, scope=d.scope_id, user=d.user_id, character=str(d.role_id)
        )
        model = deps.model_named(fallback) if fallback else deps.chat_model
        claim = claim_llm_call_in(
            s,
            turn_id,
            lease_seconds=settings.llm_lease_seconds,
            max_attempts=settings.llm_max_attempts,
        )
        if claim.kind == "stored":  # another chain's call ended after this stage's read
            s.rollback()  # the claim and its attempt are undone
            return LLMCallResult.model_validate(claim.stored)
        s.commit()
    if claim.kind == "busy":
        raise StageBusy("LLM call in flight in another chain", wait_seconds=claim.wait_seconds)
    if claim.kind == "exhausted":
        raise TurnFailed(f"LLM call failed after {claim.attempt} attempt(s)")
    if claim.kind == "not_running":
        raise TurnNotRunnable(f"turn {turn_id} is not running; llm_call does not run")
    attempts = claim.attempt
    model_name = str(getattr(model, "name", "") or "")
    t0 = time.monotonic()
    tokens: TokenWriter | None = None
    try:
        with LeaseHeartbeat(
            deps.engine, turn_id, claim.owner, lease_seconds=settings.llm_lease_seconds
        ):
            tokens = _token_writer(settings, turn_id, attempts)
            if tokens is None:
                reply = model.complete(
                    messages,
                    temperature=settings.llm_temperature,
                    max_tokens=settings.llm_max_tokens,
                )
            else:  # the same reply, its pieces published on Redis pub/sub as they arrive
                reply = complete_streaming(
                    model,
                    messages,
                    tokens,
                    temperature=settings.llm_temperature,
                    max_tokens=settings.llm_max_tokens,
                )
                tokens.finish()
    except LLMError as exc:  # the runner retries or fails, counting the turn's attempts
        if tokens is not None:
            tokens.abort()
        hooks.llm_call(model_name, time.monotonic() - t0, type(exc).__name__)
        release_llm_lease(deps.engine, turn_id, claim.owner)
        raise LLMAttemptFailed(exc, attempts) from exc
    except BaseException:
        if tokens is not None:
            tokens.abort()
        release_llm_lease(deps.engine, turn_id, claim.owner)
        raise
    hooks.llm_call(reply.model or model_name, time.monotonic() - t0, "ok")
    result = LLMCallResult(
        text=reply.text,
        model=reply.model or getattr(model, "name", ""),
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        latency_ms=reply.latency_ms,
        finish_reason=reply.finish_reason,
        attempts=attempts,
    )
    used = UsageEntry(
        result.model,
        result.prompt_tokens or 0,
        result.completion_tokens or 0,
        estimated=reply.usage_estimated,
    )
    usage = TurnUsage(turn.run, d, "reply", [used])
    kept = save_result(
        deps,
        turn_id,
        "llm_call",
        result,
        usage=usage,
        llm_lease_until=None,
        llm_lease_owner=None,
        llm_model=result.model,
        llm_latency_ms=result.latency_ms,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
    )
    usage.count(deps)
    return kept
