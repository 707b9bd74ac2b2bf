"""The delivery rate limiter shared by every worker: sliding-window logs in one atomic Lua
script in Redis (a sorted set of send times per key).

Same decision as :func:`nekoflow.delivery.ratelimit.window_decide`; the script reads Redis's own
clock (``TIME``), so workers with skewed clocks still agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nekoflow.delivery.base import RateLimit

# KEYS: one sorted set per limit. ARGV: count_1, period_us_1, count_2, period_us_2, …
# Returns the wait in microseconds as a string ("0": a slot was taken under every limit).
_WINDOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local wait = 0
for i, key in ipairs(KEYS) do
  local count = tonumber(ARGV[2 * i - 1])
  local period = tonumber(ARGV[2 * i])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - period)
  local n = redis.call('ZCARD', key)
  if n >= count then
    local oldest = redis.call('ZRANGE', key, n - count, n - count, 'WITHSCORES')
    local w = tonumber(oldest[2]) + period - now
    if w > wait then wait = w end
  end
end
if wait > 0 then return tostring(wait) end
local member = string.format('%.0f', now) .. ':' .. redis.call('INCR', KEYS[1] .. ':seq')
for i, key in ipairs(KEYS) do
  local period = tonumber(ARGV[2 * i])
  redis.call('ZADD', key, now, member)
  redis.call('PEXPIRE', key, math.ceil(period / 1000) + 1000)
end
redis.call('PEXPIRE', KEYS[1] .. ':seq', 3600000)
return '0'
"""


class RedisRateLimiter:
    """Sliding windows across processes; keys are ``{prefix}:ratelimit:{limit.key}``."""

    def __init__(self, client: Any, *, prefix: str = "nekoflow") -> None:
        self.client = client
        self.prefix = prefix
        self._script = client.register_script(_WINDOW)

    def try_acquire(self, limits: Sequence[RateLimit]) -> float:
        """0.0 when the message may go now (slots taken); else seconds to wait (nothing taken)."""
        if not limits:
            return 0.0
        keys = [f"{self.prefix}:ratelimit:{limit.key}" for limit in limits]
        args: list[str] = []
        for limit in limits:
            args += [str(limit.count), str(round(limit.period * 1_000_000))]
        raw = self._script(keys=keys, args=args)
        wait_us = float(raw.decode() if isinstance(raw, bytes) else raw)
        return wait_us / 1_000_000
