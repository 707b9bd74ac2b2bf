"""Redis client construction with production timeouts (one place for every Redis user)."""

from __future__ import annotations

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry


def make_redis(
    url: str,
    *,
    socket_timeout: float = 5.0,
    connect_timeout: float = 2.0,
    retries: int = 2,
) -> redis.Redis:
    """A client for ``url`` with bounded timeouts and a short retry budget.

    redis-py's defaults can block for many seconds per command while Redis is down; nekoflow
    prefers to fail fast and let the turn pipeline's own retries take over.
    """
    return redis.Redis.from_url(
        url,
        socket_timeout=socket_timeout,
        socket_connect_timeout=connect_timeout,
        retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), retries),
        health_check_interval=30,
    )
