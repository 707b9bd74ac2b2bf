"""AutoState cache: the last LLM evaluation's quality scores per (character, user, conversation).

The LLM review writes character_fidelity, immersion, world_consistency and risk here; the rule
review reads them back. :class:`InMemoryAutoState` serves the embedded mode and tests; the Redis
implementation lives in ``nekoflow.review.autostate_redis``.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol, runtime_checkable

QUALITY_FIELDS: tuple[str, ...] = ("character_fidelity", "immersion", "world_consistency", "risk")


@runtime_checkable
class AutoStateCache(Protocol):
    """Where LLM quality scores are kept between turns."""

    def get(self, character_id: str, user_id: str, conversation_id: str) -> dict[str, float] | None:
        """The last stored quality scores for this triple, or None."""
        ...

    def set(
        self, character_id: str, user_id: str, conversation_id: str, scores: dict[str, float]
    ) -> None:
        """Store quality scores (only :data:`QUALITY_FIELDS` are kept) for this triple."""
        ...


def quality_only(scores: dict[str, float]) -> dict[str, float]:
    """Keep the four quality fields, clamped to 0–1."""
    out: dict[str, float] = {}
    for key in QUALITY_FIELDS:
        if key in scores and scores[key] is not None:
            out[key] = min(1.0, max(0.0, float(scores[key])))
    return out


class InMemoryAutoState:
    """A thread-safe in-process AutoState cache with a time-to-live."""

    def __init__(self, ttl_seconds: float | None = None) -> None:
        self._ttl = ttl_seconds
        self._data: dict[tuple[str, str, str], tuple[float, dict[str, float]]] = {}
        self._lock = threading.Lock()

    def get(self, character_id: str, user_id: str, conversation_id: str) -> dict[str, float] | None:
        """The stored scores, unless absent or expired."""
        key = (character_id, user_id, conversation_id)
        with self._lock:
            item = self._data.get(key)
            if item is None:
                return None
            stored_at, scores = item
            if self._ttl is not None and time.monotonic() - stored_at > self._ttl:
                del self._data[key]
                return None
            return dict(scores)

    def set(
        self, character_id: str, user_id: str, conversation_id: str, scores: dict[str, float]
    ) -> None:
        """Replace the stored scores for this triple."""
        with self._lock:
            self._data[(character_id, user_id, conversation_id)] = (
                time.monotonic(),
                quality_only(scores),
            )

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._data.clear()


_process_autostate = InMemoryAutoState()


def process_autostate() -> InMemoryAutoState:
    """The process-wide in-memory cache used when no cache is passed explicitly."""
    return _process_autostate
