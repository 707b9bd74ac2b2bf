"""Admission of a message into the turn pipeline: rate limits, then the scope's on_busy policy.

Runs in ``submit_turn`` after the dispatcher accepted a message and before a ``TurnRun`` is
written — like a Dramatiq middleware's before-hook: it decides, the enqueuer acts. The
decision is one of: make a new turn (with a debounce window under ``merge``), merge into the
scope's queued turn, or skip with a reason (``rate_limited``). Whatever depends on the scope's
turns (``busy`` under ``reject``, the turn to join under ``merge``/``interrupt``) is decided by
:func:`nekoflow.turns.flow_store.create_or_merge` under the scope's lock, not here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from nekoflow.channels import ChatRequest
from nekoflow.delivery.base import RateLimit
from nekoflow.delivery.ratelimit import RateLimiter
from nekoflow.flow.limits import acquire
from nekoflow.flow.policy import FlowPolicy, OnBusy, Rate


@dataclass(frozen=True)
class Admission:
    """What to do with an accepted message."""

    kind: Literal["new", "merged", "skipped"]
    turn_id: str | None = None
    reason: str | None = None
    not_before: datetime | None = None
    #: ``on_busy = interrupt``: once the message is written, the scope's running turn that
    #: arrived before it is superseded.
    supersede: bool = False
    #: Write the turn with ``create_or_merge``: join the scope's queued turn if it has one.
    merge: bool = False
    #: ``on_busy = reject``: write the turn with ``create_or_merge`` only if the scope has no
    #: queued or running turn — decided under the scope's lock, never by a read before it.
    reject_busy: bool = False
    #: Skipped ``rate_limited``, and this message is the window's one to get the channel's
    #: ``rate_limit_reply``.
    notice: bool = False


def rate_limits(policy: FlowPolicy, channel: str, req: ChatRequest) -> list[RateLimit]:
    """The limits a message counts against: its user, its group and its channel."""

    def limit(rate: Rate | None, key: str) -> list[RateLimit]:
        if rate is None:
            return []
        return [RateLimit(key=f"flow:{key}", count=rate.count, period=rate.period)]

    user = req.user_id or (req.sender.user_id if req.sender else "") or ""
    out = limit(policy.rate_limit_channel, f"channel:{channel}")
    if req.group_id:
        out += limit(policy.rate_limit_group, f"group:{channel}:{req.group_id}")
    if user:
        out += limit(policy.rate_limit_user, f"user:{channel}:{user}")
    return out


def admit(
    known_turn: Callable[[], str | None],
    limiter: RateLimiter,
    policy: FlowPolicy,
    *,
    channel: str,
    scope_id: str,
    req: ChatRequest,
    notice: bool = False,
) -> Admission:
    """Decide what becomes of an accepted message of ``scope_id``.

    ``known_turn`` looks up the turn a redelivered message already has (None: none; the
    enqueuer reads it from SQL, only on the paths that need it). ``notice``: the caller would
    send the channel's ``rate_limit_reply`` to a message refused by a rate limit; the admission
    then says whether this message is the window's one to get it.
    """
    limits = rate_limits(policy, channel, req)
    if policy.on_busy == OnBusy.queue and not limits:
        return Admission("new")  # today's behaviour: the insert's unique key dedupes for free
    # A redelivered webhook must come back to the turn the message already has (its own or the
    # one it joined). The turn's insert (or merge) finds it in its own transaction, so only the
    # paths that would end elsewhere look it up first: a supersede (it could be the message's
    # own turn), a refusal for ``busy`` or ``rate_limited``. A redelivered message that is
    # admitted has used a rate-limit slot — the price of not reading SQL before every message.

    def known_or(fallback: Admission | None) -> Admission | None:
        known = known_turn()
        return fallback if known is None else Admission("merged", turn_id=known)

    if policy.on_busy == OnBusy.interrupt and (seen := known_or(None)) is not None:
        return seen
    if limits:
        verdict = acquire(limiter, limits, notice=notice and bool(policy.rate_limit_reply))
        if verdict.wait > 0:
            return known_or(Admission("skipped", reason="rate_limited", notice=verdict.notice))
    if policy.on_busy == OnBusy.reject:
        # Busy or not is read under the scope's lock in the insert's transaction: two
        # simultaneous first messages cannot both find the scope free.
        return Admission("new", reject_busy=True)
    if policy.on_busy in (OnBusy.merge, OnBusy.interrupt):
        # Join the scope's queued turn or start one — decided under the scope's lock when the
        # turn row is written (``turns.flow_store.create_or_merge``), so a concurrent burst is
        # one turn.
        not_before = None
        if policy.debounce_seconds and policy.on_busy == OnBusy.merge:
            not_before = datetime.now(UTC) + timedelta(seconds=policy.debounce_seconds)
        # ``interrupt``: the new message joins a queued turn or starts one — which answers both,
        # the old message being in the history — and the running turn then gives way (unless
        # past apply_deltas).
        interrupt = policy.on_busy == OnBusy.interrupt
        return Admission("new", not_before=not_before, supersede=interrupt, merge=True)
    return Admission("new")
