"""Planning proactive turns in the transaction that applies a user's turn: its silence gets a
follow-up (replacing the scope's earlier one), so the schedule commits exactly when the turn
does."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select as sa_select
from sqlalchemy.engine import Engine

from nekoflow.proactive.config import ProactivePolicy
from nekoflow.proactive.decide import follow_up_at
from nekoflow.proactive.reminders import cancels_reminders, find_reminder
from nekoflow.proactive.store import add_schedule, cancel_open
from nekoflow.proactive.tables import ProactiveSchedule, ScheduleKind
from nekoflow.proactive.turns import proactive_of
from nekoflow.storage.fastsql import Bind
from nekoflow.storage.turns import TurnRun


def follow_up_seed(scope_id: str, anchor_turn_id: str, n: int) -> str:
    """The jitter seed of follow-up ``n`` after the user's turn ``anchor_turn_id``."""
    return f"{scope_id}:{anchor_turn_id}:{n}"


def follow_up_key(anchor_turn_id: str, n: int) -> str:
    """The schedule key of follow-up ``n`` after the user's turn ``anchor_turn_id``."""
    return f"follow_up:{anchor_turn_id}:{n}"


def plan_after_user_turn(
    s: Bind, run: TurnRun, policy: ProactivePolicy, *, last_at: datetime
) -> ProactiveSchedule | None:
    """In ``s``'s transaction: the user's turn ``run`` ends a silence (the scope's due
    follow-ups are cancelled) and starts one (follow-up 1 at ``last_at`` + the gap, when the
    scope has follow-ups on). A proactive turn plans nothing here (the sweep chains those)."""
    if run.scope_id is None or proactive_of(run.request.get("metadata")) is not None:
        return None
    cancel_open(s, run.scope_id, kind=ScheduleKind.follow_up.value, reason="the user wrote")
    due = follow_up_at(last_at, policy, follow_up_seed(run.scope_id, run.turn_id, 1))
    if due is None:
        return None
    row = ProactiveSchedule(
        key=follow_up_key(run.turn_id, 1),
        kind=ScheduleKind.follow_up.value,
        channel=run.channel,
        scope_id=run.scope_id,
        character_id=run.character_id,
        bot=run.bot,
        due_at=due,
        n=1,
        anchor_turn_id=run.turn_id,
        anchor_seq=run.seq,
        request=_without_text(run.request),
        context=run.context,
    )
    add_schedule(s, row)
    return row


def _without_text(request: dict[str, Any]) -> dict[str, Any]:
    """The anchor request as stored on the schedule: the chat's ids, never the message text."""
    return {k: v for k, v in request.items() if k not in ("content", "attachments")}


def reminder_key(turn_id: str) -> str:
    """The schedule key of the reminder a user's turn asked for (one per turn)."""
    return f"reminder:{turn_id}"


def plan_reminders(
    s: Bind, run: TurnRun, policy: ProactivePolicy, *, text: str, said_at: datetime
) -> ProactiveSchedule | None:
    """In ``s``'s transaction: the user's message calls the scope's reminders off, or asks
    for one ("明天早上叫我起床"), which is scheduled at its time (reminders on)."""
    if run.scope_id is None or not policy.reminders:
        return None
    if cancels_reminders(text):
        cancel_open(s, run.scope_id, kind=ScheduleKind.reminder.value, reason="the user cancelled")
        return None
    found = find_reminder(text, said_at, policy.zone())
    if found is None:
        return None
    row = ProactiveSchedule(
        key=reminder_key(run.turn_id),
        kind=ScheduleKind.reminder.value,
        channel=run.channel,
        scope_id=run.scope_id,
        character_id=run.character_id,
        bot=run.bot,
        due_at=found.at,
        anchor_turn_id=run.turn_id,
        anchor_seq=run.seq,
        note=found.what,
        request=_without_text(run.request),
        context=run.context,
    )
    add_schedule(s, row)
    return row


def stop_scope(engine: Engine, turn_id: str, reason: str) -> int:
    """The turn's user or group can no longer be reached (``reason``: the delivery failure):
    cancel the scope's due follow-ups and reminders; they start again when the user writes."""
    with engine.begin() as conn:
        scope = conn.execute(
            sa_select(TurnRun.__table__.c.scope_id).where(  # type: ignore[attr-defined]
                TurnRun.__table__.c.turn_id == turn_id  # type: ignore[attr-defined]
            )
        ).scalar()
        if scope is None:
            return 0
        return cancel_open(conn, scope, reason=f"recipient unreachable: {reason}"[:500])
