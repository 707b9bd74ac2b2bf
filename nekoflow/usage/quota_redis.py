"""Today's token totals per quota dimension, cached in Redis so the check before each LLM call
is one MGET instead of a SQL SUM.

SQL (``llm_usage``) stays the record: a missing counter is filled from it (``SET NX``), and
each kept call adds its tokens only to counters that exist (a Lua script), so a counter is never
started from a partial sum. A worker killed between its commit and the increment leaves the
counter short until it expires (two days): quotas are a soft limit, the usage report is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_ADD_IF_PRESENT = """
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then redis.call('INCRBY', key, ARGV[1]) end
end
return 0
"""

TTL_SECONDS = 2 * 24 * 3600
"""Counters outlive their day by a day, then vanish."""


class QuotaCounters:
    """Per-day token counters keyed ``{prefix}:quota:{day}:{dimension}:{value}``."""

    def __init__(self, client: Any, *, prefix: str = "nekoflow") -> None:
        self.client = client
        self.prefix = prefix
        self._add = client.register_script(_ADD_IF_PRESENT)

    def key(self, day: str, dim: str, value: str) -> str:
        """The counter's Redis key."""
        return f"{self.prefix}:quota:{day}:{dim}:{value}"

    def get(self, day: str, dims: Sequence[tuple[str, str]]) -> list[int | None]:
        """Today's totals of ``(dimension, value)`` pairs (None: no counter yet)."""
        if not dims:
            return []
        raw = self.client.mget([self.key(day, d, v) for d, v in dims])
        return [None if r is None else int(r) for r in raw]

    def seed(self, day: str, dim: str, value: str, total: int) -> None:
        """Start a counter from the SQL total, unless another process just did."""
        self.client.set(self.key(day, dim, value), total, nx=True, ex=TTL_SECONDS)

    def add(self, day: str, dims: Sequence[tuple[str, str]], tokens: int) -> None:
        """Add a kept call's tokens to every existing counter of its dimensions."""
        if dims and tokens:
            self._add(keys=[self.key(day, d, v) for d, v in dims], args=[int(tokens)])
