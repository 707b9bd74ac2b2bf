"""Pure delivery decisions: what to do with a chunk given its row and what the sender said."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from nekoflow.delivery.status import ChunkStatus


@dataclass(frozen=True)
class Step:
    """The next step for one chunk."""

    kind: Literal["skip", "send", "wait", "unknown", "failed"]
    delay: float = 0.0


def step_when_unconfirmed(*, idempotent: bool, resend_unconfirmed: bool) -> Step:
    """What to do with a chunk that may have reached the platform unconfirmed (its worker died
    mid-call, or the call timed out or lost its connection after the request went out): ``send``
    again when the platform deduplicates by key or the operator chose at least once, else
    ``unknown`` (at most once)."""
    return Step("send") if idempotent or resend_unconfirmed else Step("unknown")


def step_for_row(
    status: str,
    lease_until: datetime | None,
    now: datetime,
    *,
    idempotent: bool,
    resend_unconfirmed: bool,
    not_before: datetime | None = None,
) -> Step:
    """What to do with an outbox row found in ``status``.

    - settled or handed over: ``skip`` (never sent again);
    - pending with ``not_before`` still ahead (a scheduled retry: the platform's retry_after or
      backoff): ``wait`` until then, whoever runs the delivery (sweeper, next in line, broker
      redelivery);
    - pending: ``send``;
    - sending with a live lease: another worker is on it, ``wait`` until the lease ends;
    - sending with an expired lease (its worker died mid-call): ``send`` again when the platform
      deduplicates by key or the operator chose at-least-once, else ``unknown`` (at most once):
      see :func:`step_when_unconfirmed`.
    """
    if status == ChunkStatus.pending:
        if not_before is not None and not_before > now:
            return Step("wait", delay=(not_before - now).total_seconds())
        return Step("send")
    if status == ChunkStatus.sending:
        if lease_until is not None and lease_until > now:
            return Step("wait", delay=(lease_until - now).total_seconds())
        return step_when_unconfirmed(idempotent=idempotent, resend_unconfirmed=resend_unconfirmed)
    return Step("skip")


def retry_delay(
    attempt: int,
    *,
    retry_after: float | None,
    base: float,
    cap: float,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait before attempt ``attempt + 1``: the platform's ``retry_after`` when it
    gave one (never less), else exponential backoff with full jitter, capped at ``cap``."""
    if retry_after is not None and retry_after >= 0:
        return float(retry_after)
    ceiling = min(cap, base * (2 ** max(0, attempt - 1)))
    return (rng or random).uniform(ceiling / 2, ceiling) if ceiling > 0 else 0.0


def give_up(attempt: int, max_attempts: int) -> bool:
    """True when ``attempt`` temporary failures are all a chunk gets."""
    return attempt >= max_attempts
