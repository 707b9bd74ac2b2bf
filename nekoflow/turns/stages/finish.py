"""How a turn ends besides done (failed, skipped), its announcement and the scope's hand-off."""

from __future__ import annotations

import logging

from sqlmodel import Session

from nekoflow.debuglog import debug_detail
from nekoflow.events import Event
from nekoflow.memory.history import write_turn
from nekoflow.observability import hooks
from nekoflow.redact import safe_error, scope_label
from nekoflow.storage.turns import (
    FINISHED,
    TurnRun,
    TurnStatus,
)
from nekoflow.turns import publications, store
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.lines import proactive_marker, render, request_of, user_lines
from nekoflow.turns.models import DispatchResult
from nekoflow.turns.notice import publish_notice, skip_reply
from nekoflow.turns.stages.common import stored_result
from nekoflow.turns.sweep import publish_claimed

log = logging.getLogger(__name__)


def fail_turn(deps: TurnDeps, turn_id: str, reason: str) -> None:
    """End a turn as failed: keep the user line, apply nothing, render the failure reply,
    and let the scope move on."""
    run = store.get_run(deps.engine, turn_id)
    if run is None or run.status in FINISHED:
        return
    d = stored_result(deps, turn_id, "dispatch", DispatchResult)
    if d is not None and not proactive_marker(run):  # a proactive turn has no user's line
        try:
            with Session(deps.engine) as s:
                write_turn(
                    s,
                    save_id=d.save_id,
                    turn_id=turn_id,
                    user_lines=user_lines(request_of(run), d),
                    reply_segments=[],
                    role_id=d.role_id,
                    display_name=d.role_name,
                    now=d.sent_at,
                )
                s.commit()
        except Exception as exc:  # keeping the line is best effort; failing the turn is not
            log.error("turn %s: could not keep the user line (%s)", turn_id, safe_error(exc))
            debug_detail(f"turn {turn_id}: could not keep the user line", exc)
    try:
        rendered = render(deps, run, deps.settings.failure_reply)
    except Exception as exc:
        log.error("turn %s: could not render the failure reply (%s)", turn_id, safe_error(exc))
        rendered = [{"type": "text", "content": deps.settings.failure_reply}]
    store.finish(deps.engine, turn_id, TurnStatus.failed, reason=reason[:2000], rendered=rendered)
    announce(deps, run, TurnStatus.failed, reason=reason[:2000])
    handoff(deps, run)


def skip_turn(deps: TurnDeps, turn_id: str, reason: str) -> None:
    """End a turn unanswered (``stale``, ``quota_exceeded``): nothing written; its delivery
    closed ``not_sent`` with the reason, or — with the channel's ``stale_reply``/``quota_reply``
    and once per scope per window — that short reply rendered and delivered; the scope moves
    on."""
    run = store.get_run(deps.engine, turn_id)
    if run is None or run.status in FINISHED:
        return
    reply = skip_reply(deps, run, reason)
    if reply is None:
        store.finish(
            deps.engine,
            turn_id,
            TurnStatus.skipped,
            reason=reason,
            rendered=[],
            close_delivery=reason,
        )
    else:  # the channel's stale/quota reply: delivered like the rate-limit reply
        store.finish(deps.engine, turn_id, TurnStatus.skipped, reason=reason, rendered=reply)
    announce(deps, run, TurnStatus.skipped, reason=reason)
    if reply is not None:
        try:
            publish_notice(turn_id, scope_label(run.scope_id, key=deps.settings.scope_hash_key))
        except Exception as exc:  # the sweeper re-publishes a delivery that stopped moving
            log.warning("turn %s: %s reply not published (%s)", turn_id, reason, safe_error(exc))
    handoff(deps, run)


def announce(deps: TurnDeps, run: TurnRun, status: TurnStatus, reason: str | None = None) -> None:
    """Emit ``turn.finished`` (ids, status and reason; never the text) once the turn's end is
    committed, so waiters (the Web API, adapters, benchmarks) need not poll the database."""
    event = Event(
        type="turn.finished",
        source="nekoflow.turns",
        conversation_id=run.scope_id,
        character_id=str(run.role_id) if run.role_id is not None else run.character_id,
        payload={"turn_id": run.turn_id, "channel": run.channel, "status": status.value}
        | ({"reason": reason} if reason else {}),
    )
    hooks.turn_ended(
        run.channel, status.value, reason, turn_id=run.turn_id, started_at=run.created_at
    )
    try:
        deps.events.emit(event)
    except Exception as exc:  # observers never break a turn
        log.error("turn %s: could not emit turn.finished (%s)", run.turn_id, safe_error(exc))


def handoff(deps: TurnDeps, run: TurnRun) -> None:
    """Start the next queued turn of ``run``'s scope, if it is now first in line."""
    if run.scope_id is None:
        return
    nxt = publications.next_queued_in_scope(deps.engine, run.scope_id)
    if nxt is not None and publications.first_publish(deps.engine, nxt.turn_id):
        publish_claimed(deps, nxt)
