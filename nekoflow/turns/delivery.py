"""The deliver stage in plain Python: send a finished turn's chunks, each exactly once where the
platform allows it, under the destination's rate limits, in turn order per conversation.

``deliver_turn`` returns an :class:`Outcome` the Celery task (``worker.deliver``) or an inline
caller acts on: ``done`` (nothing left to do), ``retry`` after ``delay`` seconds (rate limit,
retry_after, backoff, an earlier reply still on its way, another worker holding a chunk), or
``failed`` (delivery ended with the reason; the turn's own status is untouched), or
``waiting`` (an earlier reply to the same conversation is still on its way: when that one
ends, :func:`next_in_line` names this turn and its deliver task is published again).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy.engine import Engine

from nekoflow.channels.context import ChatRequest
from nekoflow.delivery import outbox
from nekoflow.delivery.base import (
    Chunk,
    Destination,
    PermanentFailure,
    RetryLater,
    Sender,
    Unconfirmed,
)
from nekoflow.delivery.decide import (
    give_up,
    retry_delay,
    step_for_row,
    step_when_unconfirmed,
)
from nekoflow.delivery.ratelimit import InMemoryRateLimiter, NoRateLimiter, RateLimiter
from nekoflow.delivery.registry import (
    destination_for,
    plan_delivery,
    rate_limits_for,
    sender_for,
)
from nekoflow.delivery.settings import DeliverySettings, get_delivery_settings
from nekoflow.delivery.tables import ChunkStatus, DeliveryStatus
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.turns import FINISHED, TurnRun, TurnStatus
from nekoflow.turns import store
from nekoflow.turns.voice_outbox import VOICE, voice_chunks
from nekoflow.turns.voice_outbox import loaded as loaded_voice
from nekoflow.turns.voice_outbox import step_of as voice_step_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What to do after one deliver run."""

    kind: Literal["done", "retry", "failed", "waiting"]
    reason: str = ""
    delay: float = 0.0


@dataclass
class DeliveryDeps:
    """What the deliver stage needs: storage, settings, a rate limiter, the sender lookup."""

    engine: Engine
    settings: Any
    delivery: DeliverySettings = field(default_factory=get_delivery_settings)
    limiter: RateLimiter = field(default_factory=InMemoryRateLimiter)
    senders: Callable[[str, str, Any], Sender | None] = sender_for
    now: Callable[[], datetime] = utcnow


def _safe(exc: BaseException) -> str:
    """An error as its class name only (messages may quote the text being sent)."""
    return f"unexpected {type(exc).__name__}"


def quoting_last_message(engine: Engine, run: TurnRun, dest: Destination) -> Destination:
    """``dest`` quoting the last message of the turn's burst: a turn that answers several
    merged messages replies to the newest one, not to the first (which the turn row holds)."""
    from nekoflow.turns.flow_store import merged_requests

    merged = merged_requests(engine, run.turn_id)
    if not merged:
        return dest
    try:
        last = destination_for(run.channel, ChatRequest.model_validate(merged[-1][0]), run.bot)
    except ValueError:
        return dest
    if last is None or not last.reply_to:
        return dest
    return dest.model_copy(update={"reply_to": last.reply_to})


def chunks_of(run: TurnRun) -> list[Chunk]:
    """The rendered reply as chunks, in order."""
    out: list[Chunk] = []
    for i, message in enumerate(run.rendered or []):
        if isinstance(message, dict):
            out.append(Chunk(index=i, kind=str(message.get("type") or "text"), payload=message))
    return out


def _all_chunks(deps: DeliveryDeps, run: TurnRun) -> list[Chunk]:
    """The reply's text chunks, then its voice chunks (when the turn is voiced)."""
    chunks = chunks_of(run)
    return chunks + voice_chunks(deps.engine, deps.settings, run, len(chunks))


def limits_for(deps: DeliveryDeps, dest: Destination, channel: str) -> list:
    """The destination's rate limits: the platform's defaults with the channel's overrides."""
    if not deps.delivery.rate_limit_enabled or isinstance(deps.limiter, NoRateLimiter):
        return []
    limits = rate_limits_for(dest)
    overrides = deps.delivery.rate_limits.get(channel) or deps.delivery.rate_limits.get(
        dest.platform, {}
    )
    out = []
    for limit in limits:
        rule = limit.key.split(":", 1)[0]
        o = overrides.get(rule)
        out.append(limit if o is None else limit.model_copy(update=o.model_dump()))
    return out


def is_notice(run: TurnRun) -> bool:
    """True for a skipped turn that carries a reply of its own: the rate-limit reply
    (``nekoflow.turns.notice``), delivered like a failed turn's failure reply."""
    return run.status == TurnStatus.skipped and bool(run.rendered)


def has_reply(run: TurnRun) -> bool:
    """True for a finished turn that has a reply to send: done, failed (the failure reply) or
    a notice; a superseded or silently skipped turn has none."""
    return run.status in (TurnStatus.done, TurnStatus.failed) or is_notice(run)


def deliver_turn(deps: DeliveryDeps, turn_id: str) -> Outcome:
    """Send what is left of ``turn_id``'s reply (idempotent: safe to run again at any time)."""
    run = store.get_run(deps.engine, turn_id)
    if run is None or run.status not in FINISHED:
        return Outcome("done", reason="turn not finished")
    if run.delivery_status not in (DeliveryStatus.pending, DeliveryStatus.sending):
        return Outcome("done", reason=f"delivery {run.delivery_status}")
    if not has_reply(run):
        # superseded by a newer message (which answers both) or skipped: nothing to send
        outbox.set_delivery(deps.engine, turn_id, DeliveryStatus.not_sent.value, run.status)
        return Outcome("done", reason=f"turn {run.status}")
    dest = plan_delivery(run)
    if dest is None:
        outbox.set_delivery(deps.engine, turn_id, None, "no destination")
        return Outcome("done", reason="no destination")
    if dest.reply_to:
        dest = quoting_last_message(deps.engine, run, dest)
    try:
        sender = deps.senders(dest.platform, dest.bot, deps.settings)
    except PermanentFailure as exc:
        return _fail(deps, turn_id, exc.reason)
    if sender is None:
        return _fail(deps, turn_id, f"no sender for platform {dest.platform}")
    earlier = outbox.earlier_open_delivery(deps.engine, run)
    if earlier is not None:  # that turn's delivery starts this one when it ends
        return Outcome("waiting", reason=f"waiting for turn {earlier}")
    rows = outbox.ensure_rows(deps.engine, turn_id, dest, _all_chunks(deps, run))
    if not rows:
        outbox.set_delivery(deps.engine, turn_id, DeliveryStatus.sent.value, "nothing to send")
        return Outcome("done")
    if run.delivery_status == DeliveryStatus.pending:
        outbox.set_delivery(deps.engine, turn_id, DeliveryStatus.sending.value, None)
    idempotent = bool(getattr(sender, "idempotent", False))
    limits = limits_for(deps, dest, run.channel)
    for row in rows:
        assert row.id is not None
        voice = row.kind == VOICE
        if voice and row.status == ChunkStatus.pending:  # its audio may not be made yet
            v = voice_step_of(deps.engine, turn_id, row.payload, row.created_at, deps.now())
            if v.kind == "await":
                return Outcome(
                    "retry", reason=f"chunk {row.idx} waits for its voice", delay=v.delay
                )
            if v.kind == "failed":
                outbox.mark_failed(deps.engine, row.id, v.reason)
                continue
        step = step_for_row(
            row.status,
            row.lease_until,
            deps.now(),
            idempotent=idempotent,
            resend_unconfirmed=deps.delivery.resend_unconfirmed,
            not_before=row.not_before,
        )
        if step.kind == "skip":
            continue
        if step.kind == "wait":
            held = row.status == ChunkStatus.sending
            why = "held by a worker" if held else "waits for its retry time"
            return Outcome("retry", reason=f"chunk {row.idx} {why}", delay=step.delay)
        if step.kind == "unknown":
            log.warning("turn %s chunk %d: worker lost mid-send, not re-sent", turn_id, row.idx)
            if not outbox.mark_unknown(deps.engine, row):
                return Outcome("retry", reason="outbox row changed", delay=0.1)
            continue
        wait = deps.limiter.try_acquire(limits)
        if wait > 0:
            return Outcome("retry", reason="rate limited", delay=wait)
        lease = deps.now() + timedelta(seconds=deps.delivery.lease_seconds)
        if not outbox.claim(deps.engine, row, lease):
            return Outcome("retry", reason="outbox row changed", delay=0.1)
        attempt = row.attempts + 1
        chunk: Chunk | None = Chunk(index=row.idx, kind=row.kind, payload=row.payload)
        if voice:
            assert chunk is not None
            chunk = loaded_voice(deps.engine, turn_id, chunk)
            if chunk is None:
                outbox.mark_failed(deps.engine, row.id, "voice: clip missing")
                continue
        try:
            result = sender.send(dest, chunk, key=outbox.chunk_key(turn_id, row.idx))
        except PermanentFailure as exc:
            outbox.mark_failed(deps.engine, row.id, exc.reason)
            if voice:  # a voice that cannot go never costs the text (already sent)
                continue
            return _fail(deps, turn_id, f"chunk {row.idx}: {exc.reason}")
        except Unconfirmed as exc:  # may have arrived: resend only where that is safe or chosen
            again = step_when_unconfirmed(
                idempotent=idempotent, resend_unconfirmed=deps.delivery.resend_unconfirmed
            )
            if again.kind == "send":
                out = _retry(
                    deps,
                    turn_id,
                    row.id,
                    row.idx,
                    attempt,
                    exc.reason,
                    exc.retry_after,
                    voice=voice,
                )
                if out is None:
                    continue
                return out
            log.warning("turn %s chunk %d: %s, not re-sent", turn_id, row.idx, exc.reason)
            outbox.mark_unconfirmed(deps.engine, row.id, exc.reason)
            continue
        except RetryLater as exc:
            out = _retry(
                deps, turn_id, row.id, row.idx, attempt, exc.reason, exc.retry_after, voice=voice
            )
            if out is None:
                continue
            return out
        except Exception as exc:  # a sender bug or a library error: temporary, named by class
            out = _retry(deps, turn_id, row.id, row.idx, attempt, _safe(exc), None, voice=voice)
            if out is None:
                continue
            return out
        outbox.mark_sent(
            deps.engine, row.id, result.platform_message_id, handed_over=result.handed_over
        )
    status = outbox.settle(deps.engine, turn_id)
    if status is None:  # a chunk went to a gateway that confirms it later
        outbox.mark_handed_over(deps.engine, turn_id)
    if status == DeliveryStatus.failed:
        return Outcome("failed", reason="a chunk failed")
    return Outcome("done")


def _retry(
    deps: DeliveryDeps,
    turn_id: str,
    row_id: int,
    index: int,
    attempt: int,
    reason: str,
    retry_after: float | None,
    *,
    voice: bool = False,
) -> Outcome | None:
    """Release the chunk for a later attempt (the retry Outcome), or give it up: the turn's
    delivery fails, except for a voice chunk, which fails alone (None: go on)."""
    if give_up(attempt, deps.delivery.max_attempts):
        reason = f"chunk {index}: gave up after {attempt} attempt(s): {reason}"
        outbox.mark_failed(deps.engine, row_id, reason)
        return None if voice else _fail(deps, turn_id, reason)
    delay = retry_delay(
        attempt,
        retry_after=retry_after,
        base=deps.delivery.backoff_base,
        cap=deps.delivery.backoff_max,
    )
    # stored on the row, not only in the task's countdown: any other run of this delivery (the
    # sweeper, next_in_line, a broker redelivery) waits too instead of sending too early
    outbox.release(deps.engine, row_id, reason, deps.now() + timedelta(seconds=delay))
    log.warning("turn %s chunk %d: %s, retrying in %.1fs", turn_id, index, reason, delay)
    return Outcome("retry", reason=reason, delay=delay)


def _fail(deps: DeliveryDeps, turn_id: str, reason: str) -> Outcome:
    log.warning("turn %s: delivery failed (%s)", turn_id, reason)
    outbox.set_delivery(deps.engine, turn_id, DeliveryStatus.failed.value, reason[:1000])
    from nekoflow.proactive.rules import recipient_gone

    if recipient_gone(reason):  # blocked, left, removed: the character starts nothing more
        from nekoflow.proactive.plan import stop_scope

        stop_scope(deps.engine, turn_id, reason)
    return Outcome("failed", reason=reason)


def next_in_line(deps: DeliveryDeps, turn_id: str) -> str | None:
    """The next finished turn of the same conversation whose reply waits for this one's."""
    run = store.get_run(deps.engine, turn_id)
    if run is None or run.delivery_status in (DeliveryStatus.pending, DeliveryStatus.sending):
        return None
    return outbox.next_open_delivery(deps.engine, run)


def initial_delivery_status(run: TurnRun, settings: Any) -> str | None:
    """``pending`` when ``run``'s reply has somewhere to go and a configured sender, else None
    (stored at enqueue: a channel without a sender, or a platform with no bot set up, never
    gets an outbox)."""
    dest = plan_delivery(run)
    if dest is None:
        return None
    try:
        sender = sender_for(dest.platform, dest.bot, settings)
    except PermanentFailure:
        return None
    return DeliveryStatus.pending.value if sender is not None else None


def send_typing(deps: DeliveryDeps, turn_id: str) -> bool:
    """Best effort typing indicator for a turn that has not finished; never raises."""
    try:
        run = store.get_run(deps.engine, turn_id)
        if run is None or run.status in FINISHED or run.delivery_status is None:
            return False
        dest = plan_delivery(run)
        if dest is None:
            return False
        sender = deps.senders(dest.platform, dest.bot, deps.settings)
        if sender is None:
            return False
        sender.typing(dest)
        return True
    except Exception as exc:
        log.info("turn %s: typing indicator not shown (%s)", turn_id, _safe(exc))
        return False
