"""Platform access tokens shared by every worker: cached in Redis until shortly before they
expire, refreshed by one process at a time (a Redis lock), dropped when the platform says the
token is no longer valid.

Used by the QQ official bot (``getAppAccessToken``) and Feishu (``tenant_access_token``). The
cache stores the token itself (every worker needs it) under ``{prefix}:token:{name}``; it is
never logged. Without Redis (a single process), :class:`LocalTokenCache` keeps it in memory.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Protocol

import redis

#: fetch() → (token, seconds until it expires), raising the platform's errors.
Fetch = Callable[[], tuple[str, float]]

_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


def cache_seconds(expires_in: float, margin: float) -> float:
    """How long to keep a token that expires in ``expires_in`` s: until ``margin`` s before,
    and never less than a tenth of its life (a platform answering a very short expiry)."""
    return max(expires_in - margin, expires_in / 10, 1.0)


class TokenCache(Protocol):
    """Hands out a valid access token of one bot."""

    def get(self) -> str:
        """A cached token, or a fresh one."""
        ...

    def invalidate(self, token: str) -> None:
        """Forget ``token`` (the platform refused it); the next ``get`` fetches another."""
        ...


class LocalTokenCache:
    """In-process token cache (one process only: tests, ``deliver`` without Redis)."""

    def __init__(self, fetch: Fetch, *, margin: float = 60.0) -> None:
        self._fetch = fetch
        self._margin = margin
        self._lock = threading.Lock()
        self._token: str | None = None
        self._until = 0.0

    def get(self) -> str:
        """A cached token, or a fresh one."""
        with self._lock:
            if self._token is None or time.monotonic() >= self._until:
                token, expires_in = self._fetch()
                self._token = token
                self._until = time.monotonic() + cache_seconds(expires_in, self._margin)
            return self._token

    def invalidate(self, token: str) -> None:
        """Forget ``token`` if it is the cached one."""
        with self._lock:
            if self._token == token:
                self._token = None


class RedisTokenCache:
    """Token cache shared through Redis; one refresh at a time across workers."""

    def __init__(
        self,
        client: redis.Redis,
        key: str,
        fetch: Fetch,
        *,
        margin: float = 60.0,
        lock_seconds: float = 15.0,
        poll: float = 0.05,
    ) -> None:
        self.client = client
        self.key = key
        self._fetch = fetch
        self._margin = margin
        self._lock_seconds = lock_seconds
        self._poll = poll
        self._release = client.register_script(_RELEASE)
        #: How many times this process fetched a token (tests, metrics).
        self.fetches = 0

    def _cached(self) -> str | None:
        value = self.client.get(self.key)
        if value is None:
            return None
        return value.decode() if isinstance(value, bytes) else str(value)

    def get(self) -> str:
        """The cached token; otherwise the lock holder fetches it and the others wait for it."""
        deadline = time.monotonic() + self._lock_seconds * 2
        while True:
            token = self._cached()
            if token:
                return token
            me = uuid.uuid4().hex
            lock = f"{self.key}:lock"
            if self.client.set(lock, me, nx=True, px=int(self._lock_seconds * 1000)):
                try:
                    token = self._cached()
                    if token:
                        return token
                    token, expires_in = self._fetch()
                    self.fetches += 1
                    ttl = cache_seconds(expires_in, self._margin)
                    self.client.set(self.key, token, px=max(1, int(ttl * 1000)))
                    return token
                finally:
                    self._release(keys=[lock], args=[me])
            if time.monotonic() > deadline:  # the holder died holding it: its lock expires
                deadline = time.monotonic() + self._lock_seconds * 2
            time.sleep(self._poll)

    def invalidate(self, token: str) -> None:
        """Drop the cached token if it is still ``token`` (one refusal → one refresh)."""
        self._release(keys=[self.key], args=[token])
