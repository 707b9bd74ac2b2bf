"""The proactive sweep: claim the due schedules (exactly once, in SQL), decide each (pure), and
start its proactive turn — a TurnRun whose dedupe key is the schedule's, so a sweep that died
mid-fire and is claimed again finds the turn the first one made instead of making another."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from nekoflow.channels import ChatRequest
from nekoflow.delivery.registry import destination_for
from nekoflow.observability import hooks
from nekoflow.proactive import store
from nekoflow.proactive.config import ProactivePolicy
from nekoflow.proactive.decide import decide_fire, next_follow_up
from nekoflow.proactive.plan import follow_up_key, follow_up_seed
from nekoflow.proactive.rules import active_quota, quota_refusal
from nekoflow.proactive.tables import ProactiveSchedule, ScheduleKind, ScheduleState
from nekoflow.proactive.turns import proactive_request
from nekoflow.redact import safe_error
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.turns import TurnRun
from nekoflow.turns import store as turn_store
from nekoflow.turns.delivery import initial_delivery_status
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.sweep import publish_claimed

log = logging.getLogger(__name__)

LEASE_SECONDS = 120.0
"""How long a sweep holds a claimed row: one that died mid-fire is claimed again after it."""


@dataclass
class SweepReport:
    """What one sweep did (schedule ids and turn ids only)."""

    fired: list[str] = field(default_factory=list)
    later: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)


def sweep_due(deps: TurnDeps, now: datetime | None = None, *, limit: int = 100) -> SweepReport:
    """Fire the schedules due at ``now`` (the wall clock unless a test injects one)."""
    now = now or utcnow()
    report = SweepReport()
    for row in store.claim_due(deps.engine, now, lease_seconds=LEASE_SECONDS, limit=limit):
        try:
            outcome = _one(deps, row, now, report)
            hooks.proactive(row.kind, outcome)
        except Exception as exc:  # its lease runs out and a later sweep tries again
            log.warning("proactive schedule %s: not fired (%s)", row.id, safe_error(exc))
    return report


def _one(deps: TurnDeps, row: ProactiveSchedule, now: datetime, report: SweepReport) -> str:
    assert row.id is not None
    policy = deps.proactive.for_scope(row.channel, row.scope_id)
    wrote = (
        row.kind == ScheduleKind.follow_up
        and row.anchor_seq is not None
        and store.user_wrote_since(deps.engine, row.scope_id, row.anchor_seq)
    )
    decision = decide_fire(
        kind=row.kind, now=now, policy=policy, user_wrote_since=wrote, unanswered=row.n - 1
    )
    if decision.kind == "drop":
        store.settle(deps.engine, row.id, ScheduleState.dropped.value, reason=decision.reason)
        report.dropped.append(row.id)
        return "dropped"
    if decision.kind == "later":
        store.settle(
            deps.engine, row.id, ScheduleState.due.value, due_at=decision.at, reason=decision.reason
        )
        report.later.append(row.id)
        return "later"
    refusal = _platform_refusal(deps, row, now)
    if refusal is not None:  # the platform would refuse it: recorded, not sent
        store.settle(deps.engine, row.id, ScheduleState.dropped.value, reason=refusal)
        report.dropped.append(row.id)
        return "dropped"
    run = TurnRun(
        turn_id=uuid.uuid4().hex,
        channel=row.channel,
        scope_id=row.scope_id,
        character_id=row.character_id,
        dedupe_key=store.turn_key(row.id),
        request=proactive_request(
            row.request, kind=row.kind, schedule_id=row.id, n=row.n, now=now, note=row.note
        ),
        context=row.context,
        bot=row.bot,
        deliver=True,
    )
    run.delivery_status = initial_delivery_status(run, deps.settings)
    turn, created = turn_store.create_turn_run(deps.engine, run, claim_publish=True)
    if created and turn.publishes == 1:
        publish_claimed(deps, turn)  # else queued behind the scope's turn, or the sweeper's
    if row.kind == ScheduleKind.follow_up and row.anchor_turn_id:
        _chain(deps, row, now, policy)
    store.settle(deps.engine, row.id, ScheduleState.fired.value, turn_id=turn.turn_id, reason=None)
    report.fired.append(turn.turn_id)
    return "fired"


def _platform_refusal(deps: TurnDeps, row: ProactiveSchedule, now: datetime) -> str | None:
    """Why the platform would refuse a message the bot starts to the schedule's chat (no
    destination, or its active-message quota used), or None."""
    try:
        request = ChatRequest.model_validate(row.request)
    except ValueError:
        return "the stored request is not valid"
    dest = destination_for(row.channel, request, row.bot)
    if dest is None:
        return None  # a channel without a sender (Web): the reply is read, not pushed
    quota = active_quota(dest)
    if quota is None:
        return None
    started = store.fired_since(deps.engine, row.scope_id, quota.since(now), now)
    return quota_refusal(quota, started)


def _chain(deps: TurnDeps, row: ProactiveSchedule, now: datetime, policy: ProactivePolicy) -> None:
    """The next follow-up after this one, unless this is the last unanswered one allowed."""
    assert row.anchor_turn_id is not None
    seed = follow_up_seed(row.scope_id, row.anchor_turn_id, row.n + 1)
    due = next_follow_up(now, policy, unanswered=row.n, seed=seed)
    if due is None:
        return
    nxt = ProactiveSchedule(
        key=follow_up_key(row.anchor_turn_id, row.n + 1),
        kind=row.kind,
        channel=row.channel,
        scope_id=row.scope_id,
        character_id=row.character_id,
        bot=row.bot,
        due_at=due,
        n=row.n + 1,
        anchor_turn_id=row.anchor_turn_id,
        anchor_seq=row.anchor_seq,
        request=row.request,
        context=row.context,
    )
    with deps.engine.begin() as conn:
        store.add_schedule(conn, nxt)
