"""Turning a platform event into a turn: parse, dispatch decision, TurnRun row, publish."""

from __future__ import annotations

import uuid
from typing import Any

from nekoflow.channels import ChatRequest
from nekoflow.flow.admission import admit
from nekoflow.flow.limits import claim_notice
from nekoflow.observability import hooks
from nekoflow.storage.turns import TurnRun
from nekoflow.turns import flow_store, publications, store
from nekoflow.turns.config_watch import refresh as refresh_config
from nekoflow.turns.delivery import initial_delivery_status
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.flow_store import Written
from nekoflow.turns.handle import TurnHandle
from nekoflow.turns.notice import send_notice, window_key
from nekoflow.turns.notify import notifier_for
from nekoflow.turns.sweep import publish_claimed


def dedupe_key(channel: str, req: ChatRequest) -> str | None:
    """Identity of a platform message, so a redelivered webhook does not make a second turn.

    Edits (Telegram ``edited_message``) are new turns: their key includes the edit marker.
    """
    if not req.message_id:
        return None
    key = f"{channel}:{req.conversation_id}:{req.message_id}"
    if req.metadata.get("edited"):
        key += f":edit:{req.metadata.get('edit_date', '')}"
    return key


def submit_turn(
    deps: TurnDeps,
    channel: str,
    raw_event: Any,
    *,
    bot: str | None = None,
    deliver: bool = True,
) -> TurnHandle:
    """Parse ``raw_event`` with the channel's adapter and start a turn when it should be answered.

    The TurnRun row is written before anything is published. Returns a skipped handle (with
    the reason) for non-chat events, disabled channels and messages that do not trigger.
    Malformed events raise the adapter's ``InputError`` naming the field.

    ``bot`` names the platform bot that received the event (and answers); ``deliver=False``
    leaves sending the reply to the caller (no outbox, no deliver task). A message skipped
    ``rate_limited`` gets the channel's ``rate_limit_reply`` (once per window) only when
    ``deliver`` is true.
    """
    refresh_config(deps)  # config.ini edited since: enable/disable channels without a restart
    adapter = deps.adapter(channel, bot)
    req = adapter.parse_event(raw_event)
    if req is None:
        hooks.turn_ended(channel, "skipped", "not_a_chat_message")
        return TurnHandle.skipped("not a chat message", channel=channel)
    decision = deps.dispatcher.dispatch(req, adapter)
    if not decision.accepted:
        reason = decision.reason.value if decision.reason is not None else "skipped"
        hooks.turn_ended(decision.channel, "skipped", reason)
        return TurnHandle.skipped(reason, channel=decision.channel)
    policy = deps.flow.for_channel(adapter.channel_name)
    key = dedupe_key(adapter.channel_name, req)
    if bot and key:
        key += f"@{bot}"  # two bots in one group each answer the same message
    admission = admit(
        lambda: flow_store.merged_turn_for(deps.engine, key),
        deps.rate_limiter,
        policy,
        channel=adapter.channel_name,
        scope_id=decision.scope_id,
        req=req,
        notice=deliver,
    )
    notifier = notifier_for(deps.settings)
    if admission.kind == "skipped":
        hooks.turn_ended(adapter.channel_name, "skipped", admission.reason or "skipped")
        if admission.notice and policy.rate_limit_reply:
            send_notice(  # the window's one reply; delivered like any reply (outbox, outbound)
                deps,
                channel=adapter.channel_name,
                scope_id=decision.scope_id,
                character_id=decision.character_id,
                req=req,
                context=decision.context.model_dump(mode="json"),
                text=policy.rate_limit_reply,
                bot=bot,
            )
        return TurnHandle.skipped(admission.reason or "skipped", channel=adapter.channel_name)
    if admission.kind == "merged":
        # Resolves to the reply of the turn the message was merged into.
        return TurnHandle(
            admission.turn_id, deps.engine, channel=adapter.channel_name, notifier=notifier
        )
    run = TurnRun(
        turn_id=uuid.uuid4().hex,
        channel=adapter.channel_name,
        scope_id=decision.scope_id,
        character_id=decision.character_id,
        dedupe_key=key,
        not_before=admission.not_before,
        request=req.model_dump(mode="json"),
        context=decision.context.model_dump(mode="json"),
        bot=bot or None,
        deliver=deliver,
    )
    run.delivery_status = initial_delivery_status(run, deps.settings)
    # The row is written with its first publication claimed when it is next in its scope
    # (decided under the scope's lock, in the insert's transaction).
    if admission.merge or admission.reject_busy:
        written = flow_store.create_or_merge(
            deps.engine,
            run,
            policy,
            claim_publish=True,
            reject_busy=admission.reject_busy,
        )
        if admission.supersede and written.outcome in ("new", "merged"):
            supersede_before(deps, run.channel, decision.scope_id, written)
        if written.outcome == "busy":
            hooks.turn_ended(adapter.channel_name, "skipped", "busy")
            if (
                deliver
                and policy.busy_reply
                and claim_notice(
                    deps.rate_limiter,
                    window_key("busy", decision.scope_id),
                    policy.notice_window_seconds,
                )
            ):
                send_notice(  # the scope's one busy reply of the window
                    deps,
                    channel=adapter.channel_name,
                    scope_id=decision.scope_id,
                    character_id=decision.character_id,
                    req=req,
                    context=decision.context.model_dump(mode="json"),
                    text=policy.busy_reply,
                    bot=bot,
                    reason="busy",
                )
            return TurnHandle.skipped("busy", channel=adapter.channel_name)
        if written.row is None:
            return TurnHandle(written.turn_id, deps.engine, channel=run.channel, notifier=notifier)
        row, created = written.row, True
    else:
        row, created = store.create_turn_run(deps.engine, run, claim_publish=True)
    if created and row.publishes == 1:
        # A broker outage does not lose the turn or hide its id: it stays queued with its
        # publish pending and the sweeper publishes it (TurnHandle.publish_pending says so).
        publish_claimed(deps, row)
    return TurnHandle(row.turn_id, deps.engine, channel=row.channel, notifier=notifier)


def supersede_before(deps: TurnDeps, channel: str, scope_id: str, written: Written) -> None:
    """``on_busy = interrupt``, after the message was written: the scope's running turn that
    arrived before it gives way (unless past apply_deltas), and the scope's next queued turn —
    the one answering the new message — starts now, the superseded turn no longer handing the
    scope on itself."""
    seq = written.row.seq if written.row is not None else None
    if seq is None and written.turn_id is not None:
        joined = store.get_run(deps.engine, written.turn_id)
        seq = joined.seq if joined is not None else None
    superseded = flow_store.supersede_running(deps.engine, scope_id, before_seq=seq)
    if superseded is None:
        return
    hooks.turn_ended(channel, "superseded", turn_id=superseded)
    nxt = publications.next_queued_in_scope(deps.engine, scope_id)
    if nxt is not None and publications.first_publish(deps.engine, nxt.turn_id):
        publish_claimed(deps, nxt)
