"""Pure proactive decisions (no Celery, Redis or SQL): when a follow-up is due, quiet hours,
the unanswered limit, seeded jitter, and whether a greeting goes out with a turn."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from nekoflow.proactive.config import ProactivePolicy, QuietHours


def jitter_fraction(seed: str) -> float:
    """A number in [-1, 1) fixed by ``seed`` (a hash, never a random generator: every process
    computes the same due time for the same silence)."""
    digest = hashlib.sha256(seed.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**63 - 1.0


def follow_up_at(last_at: datetime, policy: ProactivePolicy, seed: str) -> datetime | None:
    """When the follow-up to a silence that began at ``last_at`` is due (None: follow-ups off):
    ``follow_up_after`` ± ``follow_up_jitter`` of it, fixed by ``seed``."""
    if policy.follow_up_after is None:
        return None
    gap = policy.follow_up_after * (1 + policy.follow_up_jitter * jitter_fraction(seed))
    return last_at + timedelta(seconds=gap)


def _local(now: datetime, zone: ZoneInfo) -> datetime:
    return now.astimezone(zone)


def _inside(t: time, quiet: QuietHours) -> bool:
    if quiet.start == quiet.end:
        return False
    if quiet.start < quiet.end:
        return quiet.start <= t < quiet.end
    return t >= quiet.start or t < quiet.end  # crosses midnight


def in_quiet_hours(now: datetime, policy: ProactivePolicy) -> bool:
    """True when ``now`` (aware) falls in the scope's quiet hours, in its time zone."""
    if policy.quiet_hours is None:
        return False
    local = _local(now, policy.zone())
    return _inside(local.time().replace(second=0, microsecond=0), policy.quiet_hours)


def quiet_hours_end(now: datetime, policy: ProactivePolicy) -> datetime:
    """The first moment at or after ``now`` outside the quiet hours (``now`` itself when it is
    outside), as an aware UTC-comparable time."""
    if not in_quiet_hours(now, policy):
        return now
    assert policy.quiet_hours is not None
    local = _local(now, policy.zone())
    end = local.replace(
        hour=policy.quiet_hours.end.hour,
        minute=policy.quiet_hours.end.minute,
        second=0,
        microsecond=0,
    )
    if end <= local:
        end += timedelta(days=1)
    return end.astimezone(now.tzinfo)


@dataclass(frozen=True)
class FireDecision:
    """What the sweep does with a due schedule: fire it, move it later, or drop it."""

    kind: Literal["fire", "later", "drop"]
    reason: str = ""
    at: datetime | None = None


def decide_fire(
    *,
    kind: str,
    now: datetime,
    policy: ProactivePolicy,
    user_wrote_since: bool,
    unanswered: int,
) -> FireDecision:
    """Whether a due schedule of ``kind`` (``follow_up``/``reminder``) fires at ``now``.

    A follow-up is dropped when the user wrote since its silence began (their turn schedules
    the next one), when follow-ups were switched off, or after ``max_unanswered`` proactive
    messages in a row, and waits for the end of quiet hours; a reminder is dropped only when
    reminders were switched off, and fires at its time even in quiet hours (the user asked
    for that time: "明天早上6点叫我").
    """
    if kind == "follow_up":
        if policy.follow_up_after is None:
            return FireDecision("drop", "follow-ups off")
        if user_wrote_since:
            return FireDecision("drop", "the user wrote")
        if unanswered >= policy.max_unanswered:
            return FireDecision("drop", f"{unanswered} unanswered")
        if in_quiet_hours(now, policy):
            return FireDecision("later", "quiet hours", quiet_hours_end(now, policy))
    elif not policy.reminders:
        return FireDecision("drop", "reminders off")
    return FireDecision("fire")  # a reminder keeps its time, quiet hours or not (it was asked)


def next_follow_up(
    fired_at: datetime, policy: ProactivePolicy, *, unanswered: int, seed: str
) -> datetime | None:
    """After a follow-up left ``unanswered`` proactive messages in a row: when the next one is
    due, or None when that is the limit (it stops until the user writes again)."""
    if unanswered >= policy.max_unanswered:
        return None
    return follow_up_at(fired_at, policy, seed)


def greeting_to_deliver(rows: Sequence[Any], save_id: int) -> str | None:
    """The greeting a turn delivers before its reply: the text of the conversation's greeting
    line while no reply of the character follows it (the conversation's first answered turn),
    else None. Derived from the save, so every retry of the turn decides the same."""
    greeting_turn = f"greeting:{save_id}"
    greeting: str | None = None
    for row in rows:
        turn_id = getattr(row, "turn_id", None)
        if turn_id == greeting_turn:
            greeting = getattr(row, "content", None) or None
        elif getattr(row, "attribute", None) != "user":
            return None  # the character already answered after its greeting
    return greeting
