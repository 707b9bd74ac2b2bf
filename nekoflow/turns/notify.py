"""Turn-finished notifications over Redis pub/sub, so ``TurnHandle.wait`` need not poll.

Whoever ends a turn publishes ``{prefix}:turn-finished:{turn_id}`` (payload: the status only).
A waiter subscribes *before* reading the turn's row, so a notification can never slip between
the read and the subscription; it still re-reads the row every ``recheck`` seconds, so a lost
notification (Redis restart) only costs latency. Without Redis (embedded SQLite demo) handles
poll the database as before.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

RECHECK_SECONDS = 1.0
"""How often a waiter re-reads the database even without a notification."""


def channel(prefix: str, turn_id: str) -> str:
    """The pub/sub channel of one turn's end."""
    return f"{prefix}:turn-finished:{turn_id}"


class TurnNotifier:
    """Publishes and awaits turn-finished notifications on one Redis server."""

    def __init__(self, url: str, prefix: str) -> None:
        self.url = url
        self.prefix = prefix
        self._client: Any = None
        self._lock = threading.Lock()

    def _redis(self) -> Any:
        with self._lock:
            if self._client is None:
                from nekoflow.redis_client import make_redis

                self._client = make_redis(self.url)
            return self._client

    def publish(self, turn_id: str, status: str) -> None:
        """Announce that ``turn_id`` ended with ``status`` (best effort, never raises)."""
        try:
            self._redis().publish(channel(self.prefix, turn_id), status)
        except Exception as exc:
            log.info("turn %s: finished notification not sent (%s)", turn_id, type(exc).__name__)

    def wait(self, turn_id: str, finished: Callable[[], bool], timeout: float) -> bool:
        """Block until ``finished()`` is true (checked on each notification and every
        ``RECHECK_SECONDS``) or ``timeout`` passes; returns the last ``finished()``."""
        deadline = time.monotonic() + timeout
        try:
            pubsub = self._redis().pubsub(ignore_subscribe_messages=True)
            pubsub.subscribe(channel(self.prefix, turn_id))
        except Exception:
            return _poll(finished, deadline)
        try:
            while True:
                if finished():
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                try:
                    pubsub.get_message(timeout=min(remaining, RECHECK_SECONDS))
                except Exception:
                    return _poll(finished, deadline)
        finally:
            with contextlib.suppress(Exception):  # closing a broken connection
                pubsub.close()

    async def wait_async(
        self, turn_id: str, finished: Callable[[], Awaitable[bool]], timeout: float
    ) -> bool:
        """:meth:`wait` for asyncio code (redis.asyncio; the database check is awaited)."""
        import asyncio

        import redis.asyncio as aioredis

        deadline = time.monotonic() + timeout
        client = aioredis.Redis.from_url(self.url, socket_connect_timeout=2.0)
        try:
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(channel(self.prefix, turn_id))
            except Exception:
                pubsub = None
            while True:
                if await finished():
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                step = min(remaining, RECHECK_SECONDS)
                if pubsub is None:
                    await asyncio.sleep(min(step, 0.2))
                    continue
                try:
                    await pubsub.get_message(timeout=step)
                except Exception:
                    pubsub = None
        finally:
            await client.aclose()


def _poll(finished: Callable[[], bool], deadline: float) -> bool:
    delay = 0.05
    while True:
        if finished():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 1.5, 0.5)


_notifiers: dict[tuple[str, str], TurnNotifier] = {}
_notifiers_lock = threading.Lock()


def notifier_for(settings: Any) -> TurnNotifier | None:
    """The notifier of ``settings``' Redis when the broker is Redis (workers then publish), else
    None (embedded mode: handles poll the database)."""
    broker = str(getattr(settings, "broker_url", "") or "")
    if not broker.startswith(("redis://", "rediss://", "unix://")):
        return None
    key = (settings.redis_url, settings.redis_prefix)
    with _notifiers_lock:
        if key not in _notifiers:
            _notifiers[key] = TurnNotifier(settings.redis_url, settings.redis_prefix)
        return _notifiers[key]
