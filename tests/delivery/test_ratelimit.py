"""Sliding-window rate limits: the pure decision, the in-process limiter and the Redis (Lua)
limiter shared by processes — exact per window, all-or-nothing across limits, delay not drop."""

from __future__ import annotations

import itertools
import threading

import pytest
import redis

from nekoflow.delivery.base import RateLimit
from nekoflow.delivery.ratelimit import InMemoryRateLimiter, window_decide
from nekoflow.delivery.ratelimit_redis import RedisRateLimiter

CHAT = RateLimit(key="chat:telegram:neko:1", count=1, period=1.0)
GROUP = RateLimit(key="group:telegram:neko:1", count=20, period=60.0)
BOT = RateLimit(key="bot:telegram:neko", count=30, period=1.0)


def test_window_decide_waits_for_the_oldest_send_to_leave() -> None:
    assert window_decide([GROUP], {}, 100.0) == 0.0
    full = {GROUP.key: [100.0 + i for i in range(20)]}
    assert window_decide([GROUP], full, 130.0) == pytest.approx(30.0)  # 100 + 60 - 130
    assert window_decide([GROUP], full, 160.5) == 0.0  # the first left the window
    both = {GROUP.key: [100.0] * 20, CHAT.key: [159.0]}
    assert window_decide([CHAT, GROUP], both, 159.5) == pytest.approx(0.5)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_in_memory_limiter_is_exact_per_window_and_all_or_nothing() -> None:
    clock = FakeClock()
    limiter = InMemoryRateLimiter(clock=clock)
    group = [CHAT, GROUP]
    sent = []
    for _ in range(200):  # try every 0.25 s for 50 s
        if limiter.try_acquire(group) == 0.0:
            sent.append(clock.now)
        clock.now += 0.25
    assert len(sent) == 20  # 20 per minute per group, however eager the sender
    assert all(b - a >= 1.0 for a, b in itertools.pairwise(sent))  # 1/s per chat
    # a message delayed by the group limit took nothing from the bot limit
    other = RateLimit(key="chat:telegram:neko:2", count=1, period=1.0)
    assert limiter.try_acquire([other, BOT]) == 0.0


def test_redis_limiter_shared_by_threads_never_exceeds_the_window(redis_client: redis.Redis):
    limiter = RedisRateLimiter(redis_client, prefix="rl-test")
    limit = [RateLimit(key="chat:x", count=5, period=30.0)]
    granted: list[int] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        other = RedisRateLimiter(
            redis.Redis.from_url(
                redis_client.connection_pool.connection_kwargs and _url(redis_client)
            ),
            prefix="rl-test",
        )
        for _ in range(5):
            if other.try_acquire(limit) == 0.0:
                with lock:
                    granted.append(n)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(granted) == 5  # 30 attempts from 6 clients: exactly the window's 5
    wait = limiter.try_acquire(limit)
    assert 25.0 < wait <= 30.0
    # a refused attempt recorded nothing under the other limit
    assert limiter.try_acquire([RateLimit(key="bot:y", count=1, period=30.0)]) == 0.0


def _url(client: redis.Redis) -> str:
    kw = client.connection_pool.connection_kwargs
    return f"redis://{kw.get('host', '127.0.0.1')}:{kw.get('port', 6379)}/{kw.get('db', 0)}"
