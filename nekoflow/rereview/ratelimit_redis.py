"""A rate limiter shared by every worker through Redis (fixed windows, ``INCR`` + ``EXPIRE``)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any


class RedisRateLimiter:
    """At most ``rate`` calls per second across all processes sharing ``key``.

    Time is cut into windows of ``max(1, 1/rate)`` seconds, each allowing ``rate × window``
    calls (at least one); a caller over the budget sleeps until the next window.
    """

    def __init__(
        self,
        client: Any,
        key: str,
        rate: float,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.client = client
        self.key = key
        self.window = max(1.0, 1.0 / rate)
        self.budget = max(1, math.floor(rate * self.window))
        self._clock = clock
        self._sleep = sleep

    def acquire(self) -> None:
        """Take one call from the current window's budget, waiting for later windows if spent."""
        while True:
            now = self._clock()
            window = int(now // self.window)
            key = f"{self.key}:{window}"
            pipe = self.client.pipeline()
            pipe.incr(key)
            pipe.expire(key, int(self.window * 2) + 1)
            count = pipe.execute()[0]
            if count <= self.budget:
                return
            self._sleep(max(0.001, (window + 1) * self.window - now))
