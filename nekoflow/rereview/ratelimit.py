"""Rate limiters for LLM-mode re-review: an in-process one (embedded runs) and the protocol the
Redis-backed limiter (``ratelimit_redis``, shared by every worker) follows."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol


class RateLimiter(Protocol):
    """Blocks until one more call is allowed."""

    def acquire(self) -> None:
        """Wait for a slot."""


class IntervalLimiter:
    """At most ``rate`` calls per second in this process (evenly spaced; thread-safe)."""

    def __init__(
        self,
        rate: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.interval = 1.0 / rate
        self._clock = clock
        self._sleep = sleep
        self._next = 0.0
        self._lock = threading.Lock()

    def acquire(self) -> None:
        """Wait until the next evenly spaced slot."""
        with self._lock:
            now = self._clock()
            slot = max(now, self._next)
            self._next = slot + self.interval
        if slot > now:
            self._sleep(slot - now)
