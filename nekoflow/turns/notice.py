"""The short replies to skipped messages (``rate_limit_reply``, ``busy_reply``; the stale and
quota replies of :func:`skip_reply`), sent through the normal delivery machinery.

A message refused by a rate limit that is the window's one to get the reply
(:class:`nekoflow.flow.limits.Verdict` ``notice``) gets a *notice*: a turn row that is born
finished — ``skipped`` with reason ``rate_limited``, its ``rendered`` the reply as the channel's
adapter renders any reply, its delivery ``pending`` — after which it is delivered exactly like a
failed turn's failure reply: the ``nekoflow.turn.deliver`` task on ``outbound`` (arguments: ids
only), outbox rows, the destination's rate limits, retries, and the sweeper re-publishing a
delivery whose task was lost. The notice has no place in the scope's order (no ``seq``): it
neither waits for nor holds up the scope's replies, and is never run. A message refused ``busy``
(``on_busy = reject``) gets ``busy_reply`` the same way, once per scope per
``notice_window_seconds``. A turn skipped ``stale`` or ``quota_exceeded`` keeps its own row and
place: :func:`skip_reply` renders ``stale_reply``/``quota_reply`` into it (once per scope per
window), and it is delivered in the scope's reply order.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from nekoflow.channels import ChatRequest
from nekoflow.delivery.tables import DeliveryStatus
from nekoflow.flow.limits import claim_notice
from nekoflow.flow.policy import reply_for
from nekoflow.redact import safe_error, scope_label
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.turns import TurnRun, TurnStatus
from nekoflow.turns import store
from nekoflow.turns.delivery import initial_delivery_status
from nekoflow.turns.deps import TurnDeps

log = logging.getLogger(__name__)

REASON = "rate_limited"


def publish_notice(turn_id: str, scope: str | None) -> None:
    """Publish the notice's deliver task (``nekoflow.turn.deliver`` on ``outbound``)."""
    from nekoflow.taskqueue import task_queue

    task_queue().publish_delivery(turn_id, scope)


def notice_run(
    deps: TurnDeps,
    *,
    channel: str,
    scope_id: str | None,
    character_id: str | None,
    req: ChatRequest,
    context: dict[str, Any],
    text: str,
    bot: str | None,
    reason: str = REASON,
) -> TurnRun:
    """The notice's turn row (not stored): finished, its reply rendered, its delivery planned."""
    now = utcnow()
    run = TurnRun(
        turn_id=uuid.uuid4().hex,
        channel=channel,
        scope_id=scope_id,
        character_id=character_id,
        status=TurnStatus.skipped.value,
        reason=reason,
        request=req.model_dump(mode="json"),
        context=context,
        bot=bot or None,
        deliver=True,
        started_at=now,
        finished_at=now,
    )
    from nekoflow.turns.lines import render

    try:
        run.rendered = render(deps, run, text)
    except Exception as exc:  # as a failed turn's failure reply: plain text then
        log.error("could not render the %s reply (%s)", reason, safe_error(exc))
        run.rendered = [{"type": "text", "content": text}]
    run.delivery_status = initial_delivery_status(run, deps.settings)
    return run


def send_notice(
    deps: TurnDeps,
    *,
    channel: str,
    scope_id: str | None,
    character_id: str | None,
    req: ChatRequest,
    context: dict[str, Any],
    text: str,
    bot: str | None,
    reason: str = REASON,
) -> str | None:
    """Store the notice and publish its delivery; its turn id, or None when the message has no
    destination with a sender (nothing is stored then) or the notice could not be stored.
    Never raises: a notice never fails the enqueue (a lost publish is the sweeper's)."""
    try:
        run = notice_run(
            deps,
            channel=channel,
            scope_id=scope_id,
            character_id=character_id,
            req=req,
            context=context,
            text=text,
            bot=bot,
            reason=reason,
        )
        if run.delivery_status is None:
            return None
        row, _ = store.create_turn_run(deps.engine, run)
    except Exception as exc:
        log.error("channel %s: rate-limit reply not stored (%s)", channel, safe_error(exc))
        return None
    try:
        publish_notice(row.turn_id, scope_label(row.scope_id, key=deps.settings.scope_hash_key))
    except Exception as exc:  # the sweeper re-publishes a delivery that stopped moving
        log.warning(
            "turn %s: rate-limit reply not published (%s); the sweeper will",
            row.turn_id,
            safe_error(exc),
        )
    return row.turn_id


def window_key(reason: str, scope_id: str | None) -> str:
    """The notice mark of a scope's ``busy``/``stale``/``quota_exceeded`` reply window."""
    return f"flow:reply:{reason}:{scope_id or ''}"


def skip_reply(deps: TurnDeps, run: TurnRun, reason: str) -> list[dict[str, Any]] | None:
    """The rendered ``stale_reply``/``quota_reply`` a turn skipped with ``reason`` sends, when
    its channel sets one, the turn has a delivery, and it is the scope's one reply of the
    window; else None (the turn ends silent). Never raises."""
    policy = deps.flow.for_channel(run.channel)
    text = reply_for(policy, reason)
    if not text or run.delivery_status != DeliveryStatus.pending:
        return None
    try:
        key = window_key(reason, run.scope_id)
        if not claim_notice(deps.rate_limiter, key, policy.notice_window_seconds):
            return None
        from nekoflow.turns.lines import render

        return render(deps, run, text)
    except Exception as exc:  # a reply is a courtesy: the turn still ends skipped
        log.error("turn %s: no %s reply (%s)", run.turn_id, reason, safe_error(exc))
        return None
