"""Rate limits per destination as sliding-window logs, pure decision logic.

A limit of ``count`` messages per ``period`` seconds keeps the send times of the last ``period``
seconds under its key; a message may go when, for every limit that applies (per chat, per group,
per bot), fewer than ``count`` sends lie in the window — then its time is recorded under every
key at once (all or nothing: a message delayed by one limit costs nothing in the others). This
is exact — never more than ``count`` in any window of ``period`` seconds, which is how Telegram
counts (20 per minute per group means 20 in any minute) — where a GCRA/token bucket lets a full
burst plus the sustained rate through in one window. A delayed message is retried after the
returned wait, never dropped.

:class:`InMemoryRateLimiter` runs the decision over a dict (embedded mode, unit tests);
``ratelimit_redis.RedisRateLimiter`` runs the same decision atomically in Redis (Lua, sorted
sets), shared by every worker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from nekoflow.delivery.base import RateLimit


def window_decide(
    limits: Sequence[RateLimit], logs: Mapping[str, Sequence[float]], now: float
) -> float:
    """Seconds to wait before a message may go under every limit (0.0: it may go now).

    ``logs`` maps each limit's key to its recorded send times (any order; old ones ignored).
    """
    wait = 0.0
    for limit in limits:
        recent = sorted(t for t in logs.get(limit.key, ()) if t > now - limit.period)
        if len(recent) >= limit.count:
            # the oldest send that must leave the window before one more fits
            leaves_at = recent[len(recent) - limit.count] + limit.period
            wait = max(wait, leaves_at - now)
    return wait


class RateLimiter(Protocol):
    """Takes a slot under every given limit, or says how long to wait."""

    def try_acquire(self, limits: Sequence[RateLimit]) -> float:
        """0.0 when the message may go now (slots taken); else seconds to wait (nothing taken)."""
        ...


class InMemoryRateLimiter:
    """Sliding windows in an in-process dict (one process only: the embedded demo, tests)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._logs: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def try_acquire(self, limits: Sequence[RateLimit]) -> float:
        """See :meth:`RateLimiter.try_acquire`."""
        if not limits:
            return 0.0
        with self._lock:
            now = self._clock()
            wait = window_decide(limits, self._logs, now)
            if wait > 0:
                return wait
            for limit in limits:
                kept = [t for t in self._logs.get(limit.key, []) if t > now - limit.period]
                self._logs[limit.key] = [*kept, now]
            return 0.0

    @property
    def clock(self) -> Callable[[], float]:
        """The limiter's clock (seconds)."""
        return self._clock

    def waits(self, limits: Sequence[RateLimit]) -> dict[str, float]:
        """Seconds until each full limit among ``limits`` has room again, by key (no slot taken)."""
        with self._lock:
            now = self._clock()
            out = {limit.key: window_decide([limit], self._logs, now) for limit in limits}
        return {key: wait for key, wait in out.items() if wait > 0}


class NoRateLimiter:
    """Never waits (rate limiting turned off)."""

    def try_acquire(self, limits: Sequence[RateLimit]) -> float:
        """Always 0.0."""
        return 0.0
