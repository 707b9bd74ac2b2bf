"""AutoState cache in Redis: one hash per (character, user, conversation) with an expiry."""

from __future__ import annotations

import redis

from nekoflow.review.autostate import QUALITY_FIELDS, quality_only


class RedisAutoState:
    """AutoState shared by all workers: ``{prefix}:autostate:{character}:{user}:{conversation}``."""

    def __init__(
        self, client: redis.Redis, *, prefix: str = "nekoflow", ttl_seconds: int = 7 * 24 * 3600
    ) -> None:
        self._r = client
        self._prefix = prefix
        self._ttl = ttl_seconds

    def _key(self, character_id: str, user_id: str, conversation_id: str) -> str:
        return f"{self._prefix}:autostate:{character_id}:{user_id}:{conversation_id}"

    def get(self, character_id: str, user_id: str, conversation_id: str) -> dict[str, float] | None:
        """The stored scores, or None when absent or expired."""
        raw = self._r.hgetall(self._key(character_id, user_id, conversation_id))
        if not raw:
            return None
        out: dict[str, float] = {}
        for k, v in raw.items():
            name = k.decode() if isinstance(k, bytes) else str(k)
            if name in QUALITY_FIELDS:
                try:
                    out[name] = float(v)
                except (TypeError, ValueError):
                    continue
        return out or None

    def set(
        self, character_id: str, user_id: str, conversation_id: str, scores: dict[str, float]
    ) -> None:
        """Replace the stored scores atomically and refresh the expiry."""
        key = self._key(character_id, user_id, conversation_id)
        mapping = {k: repr(v) for k, v in quality_only(scores).items()}
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(key)
        if mapping:
            pipe.hset(key, mapping=mapping)
            pipe.expire(key, self._ttl)
        pipe.execute()
