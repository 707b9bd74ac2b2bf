"""Admission rate limits with the over-the-limit reply: take a slot, or say how long to wait and
whether this message is the one that gets the window's reply (``rate_limit_reply``).

The reply goes out at most once per window of each full limit: when a message is refused, every
limit that is full gets a *notice mark* that lives until that limit has room again; the message
that sets a mark (SET NX) gets the reply, the others of the window do not. In Redis the slot
decision and the marks are one Lua script (the same sliding windows and keys as
:class:`nekoflow.delivery.ratelimit_redis.RedisRateLimiter`, which enqueuers without a reply
keep using), so any number of enqueuers agree; the in-process limiter keeps its marks in a
:class:`NoticeMarks` beside it.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nekoflow.delivery.base import RateLimit
from nekoflow.delivery.ratelimit import InMemoryRateLimiter, RateLimiter
from nekoflow.delivery.ratelimit_redis import RedisRateLimiter

NOTICE_SUFFIX = ":notice"
"""Appended to a limit's key to name its notice mark (in process)."""

REDIS_MARKS = "ratelimit-notice"
"""Redis: a limit's notice mark is ``{prefix}:ratelimit-notice:{key}`` (its window is
``{prefix}:ratelimit:{key}``: the two can never name the same key, whatever a user id holds)."""


@dataclass(frozen=True)
class Verdict:
    """What the limiter said about one message."""

    #: Seconds until the message would fit (0.0: admitted, a slot was taken under every limit).
    wait: float = 0.0
    #: Refused, and this message set a notice mark: it gets the window's reply.
    notice: bool = False


def marks_to_set(waits: Mapping[str, float]) -> dict[str, float]:
    """The notice marks a refused message tries to set: each full limit's key (with
    :data:`NOTICE_SUFFIX`) and how long it lives — until that limit has room again (>= 1 ms)."""
    return {key + NOTICE_SUFFIX: max(wait, 0.001) for key, wait in waits.items() if wait > 0}


class NoticeMarks:
    """Notice marks in process (the embedded mode and tests): SET NX with a lifetime."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def claim(self, marks: Mapping[str, float]) -> bool:
        """Set every mark that is not set (each for its lifetime in seconds); True when this
        call set at least one of them."""
        with self._lock:
            now = self._clock()
            claimed = False
            for key, ttl in marks.items():
                if self._until.get(key, float("-inf")) <= now:
                    self._until[key] = now + ttl
                    claimed = True
            if len(self._until) > 10_000:  # forget expired marks now and then
                self._until = {k: t for k, t in self._until.items() if t > now}
            return claimed


# KEYS: the window (sorted set) of each limit, then the notice mark of each limit, in the same
# order. ARGV: count_1, period_us_1, … Returns "0" (a slot was taken under every limit) or
# "<wait_us>:<1 if this call set a notice mark, else 0>".
_WINDOW_NOTICE = """
local n = #KEYS / 2
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local wait = 0
local waits = nil
for i = 1, n do
  local key = KEYS[i]
  local count = tonumber(ARGV[2 * i - 1])
  local period = tonumber(ARGV[2 * i])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - period)
  local c = redis.call('ZCARD', key)
  if c >= count then
    local oldest = redis.call('ZRANGE', key, c - count, c - count, 'WITHSCORES')
    local w = tonumber(oldest[2]) + period - now
    if w > 0 then
      waits = waits or {}
      waits[i] = w
      if w > wait then wait = w end
    end
  end
end
if wait > 0 then
  local claimed = 0
  for i = 1, n do
    if waits[i] then
      local ttl = math.max(1, math.ceil(waits[i] / 1000))
      if redis.call('SET', KEYS[n + i], '1', 'NX', 'PX', ttl) then claimed = 1 end
    end
  end
  return tostring(wait) .. ':' .. claimed
end
local member = string.format('%.0f', now) .. ':' .. redis.call('INCR', KEYS[1] .. ':seq')
for i = 1, n do
  local period = tonumber(ARGV[2 * i])
  redis.call('ZADD', KEYS[i], now, member)
  redis.call('PEXPIRE', KEYS[i], math.ceil(period / 1000) + 1000)
end
redis.call('PEXPIRE', KEYS[1] .. ':seq', 3600000)
return '0'
"""

#: The notice script registered with each Redis limiter's client, by limiter id.
_scripts: dict[int, tuple[RedisRateLimiter, Any]] = {}
_marks: weakref.WeakKeyDictionary[Any, NoticeMarks] = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()


def _redis_acquire(limiter: RedisRateLimiter, limits: Sequence[RateLimit]) -> Verdict:
    entry = _scripts.get(id(limiter))  # no lock on the hot path: a dict read is atomic
    if entry is None or entry[0] is not limiter:
        with _registry_lock:
            entry = _scripts[id(limiter)] = (
                limiter,
                limiter.client.register_script(_WINDOW_NOTICE),
            )
    prefix = limiter.prefix
    args: list[str] = []
    for limit in limits:
        args += [str(limit.count), str(round(limit.period * 1_000_000))]
    keys = [f"{prefix}:ratelimit:{limit.key}" for limit in limits]
    keys += [f"{prefix}:{REDIS_MARKS}:{limit.key}" for limit in limits]
    raw = entry[1](keys=keys, args=args)
    wait_us, _, claimed = (raw.decode() if isinstance(raw, bytes) else raw).partition(":")
    return Verdict(wait=float(wait_us) / 1_000_000, notice=claimed == "1")


def _local_acquire(limiter: InMemoryRateLimiter, limits: Sequence[RateLimit]) -> Verdict:
    wait = limiter.try_acquire(limits)
    if wait <= 0:
        return Verdict()
    with _registry_lock:
        marks = _marks.get(limiter)
        if marks is None:
            marks = _marks[limiter] = NoticeMarks(limiter.clock)
    return Verdict(wait=wait, notice=marks.claim(marks_to_set(limiter.waits(limits))))


def acquire(limiter: RateLimiter, limits: Sequence[RateLimit], *, notice: bool) -> Verdict:
    """Take a slot under every limit, or refuse; with ``notice``, a refused message also tries
    to set the notice marks of the full limits (:class:`Verdict` ``notice``: it gets the reply).

    Without ``notice`` this is exactly ``limiter.try_acquire`` (one call, nothing added). A
    limiter that is neither the Redis nor the in-process one refuses without a notice.
    """
    if not limits:
        return Verdict()
    if notice:
        if isinstance(limiter, RedisRateLimiter):
            return _redis_acquire(limiter, limits)
        if isinstance(limiter, InMemoryRateLimiter):
            return _local_acquire(limiter, limits)
    return Verdict(wait=limiter.try_acquire(limits))


_process_marks = NoticeMarks()
"""Notice marks of limiters that keep none of their own (no Redis, not in process)."""


def claim_notice(limiter: RateLimiter, key: str, seconds: float) -> bool:
    """Set the notice mark ``key`` for ``seconds`` unless it is set: True when this call set
    it — the one reply of its window (``busy_reply``, ``stale_reply``, ``quota_reply``). In
    Redis (``SET NX PX``, shared by every enqueuer and worker) beside the rate-limit marks;
    in process otherwise."""
    if isinstance(limiter, RedisRateLimiter):
        name = f"{limiter.prefix}:{REDIS_MARKS}:{key}"
        return bool(limiter.client.set(name, "1", nx=True, px=max(1, round(seconds * 1000))))
    marks = _process_marks
    if isinstance(limiter, InMemoryRateLimiter):
        with _registry_lock:
            marks = _marks.get(limiter) or _marks.setdefault(limiter, NoticeMarks(limiter.clock))
    return marks.claim({key + NOTICE_SUFFIX: seconds})
