"""Turning a platform event into a turn: parse, dispatch decision, TurnRun row, publish."""

from __future__ import annotations

import uuid
from typing import Any

from nekoflow.channels import ChatRequest
from nekoflow.storage.turns import TurnRun
from nekoflow.turns import store
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.handle import TurnHandle


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


def submit_turn(deps: TurnDeps, channel: str, raw_event: Any) -> TurnHandle:
    """Parse ``raw_event`` with the channel's adapter and start a turn when it should be answered.

    The TurnRun row is written before anything is published. Returns a skipped handle (with
    the reason) for non-chat events, disabled channels and messages that do not trigger.
    Malformed events raise the adapter's ``InputError`` naming the field.
    """
    adapter = deps.adapter(channel)
    req = adapter.parse_event(raw_event)
    if req is None:
        return TurnHandle.skipped("not a chat message", channel=channel)
    decision = deps.dispatcher.dispatch(req, adapter)
    if not decision.accepted:
        reason = decision.reason.value if decision.reason is not None else "skipped"
        return TurnHandle.skipped(reason, channel=decision.channel)
    run = TurnRun(
        turn_id=uuid.uuid4().hex,
        channel=adapter.channel_name,
        scope_id=decision.scope_id,
        character_id=decision.character_id,
        dedupe_key=dedupe_key(adapter.channel_name, req),
        request=req.model_dump(mode="json"),
        context=decision.context.model_dump(mode="json"),
    )
    row, created = store.create_turn_run(deps.engine, run)
    if created and store.publish_first_if_next(deps.engine, row):
        deps.publish(row)
    return TurnHandle(row.turn_id, deps.engine, channel=row.channel)
