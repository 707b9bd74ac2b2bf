"""Today's token totals per quota dimension, kept in Redis so the check before each LLM call is
one MGET instead of a SQL SUM.

SQL (``llm_usage``) stays the record. A day's counters are *complete* once the day's marker
key exists: it is set by :meth:`QuotaCounters.rebuild` after every counter of the day has been
filled from SQL (at the day's first check, or after Redis lost its data), and from then on each
kept call adds its tokens to its counters, creating them (a Lua script). While the marker is
missing, a call adds only to counters that exist, so none is started from a partial sum.

Quotas are a soft limit: a worker killed between its commit and the increment, or a call kept
while a rebuild is reading SQL, leaves a counter short until it expires (two days); the usage
report is exact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

TTL_SECONDS = 2 * 24 * 3600
"""Counters outlive their day by a day, then vanish."""

_ADD = """
local complete = redis.call('EXISTS', KEYS[1]) == 1
for i = 2, #KEYS do
  if complete or redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('INCRBY', KEYS[i], ARGV[1])
    if redis.call('TTL', KEYS[i]) < 0 then redis.call('EXPIRE', KEYS[i], ARGV[2]) end
  end
end
return 0
"""

_REBUILD_CHUNK = 1000


class QuotaCounters:
    """Per-day token counters keyed ``{prefix}:quota:{day}:{dimension}:{value}``."""

    def __init__(self, client: Any, *, prefix: str = "nekoflow") -> None:
        self.client = client
        self.prefix = prefix
        self._add = client.register_script(_ADD)

    def key(self, day: str, dim: str, value: str) -> str:
        """The counter's Redis key."""
        return f"{self.prefix}:quota:{day}:{dim}:{value}"

    def marker(self, day: str) -> str:
        """The key saying the day's counters are complete (a missing counter is zero)."""
        return f"{self.prefix}:quota:{day}:complete"

    def get(self, day: str, dims: Sequence[tuple[str, str]]) -> list[int | None]:
        """Today's totals of ``(dimension, value)`` pairs, in one MGET; None for every missing
        counter while the day is not complete (the caller then rebuilds it from SQL)."""
        if not dims:
            return []
        *raw, complete = self.client.mget(
            [self.key(day, d, v) for d, v in dims] + [self.marker(day)]
        )
        missing = 0 if complete is not None else None
        return [missing if r is None else int(r) for r in raw]

    def rebuild(self, day: str, totals: Mapping[tuple[str, str], int]) -> None:
        """Fill the day's counters from SQL ``totals`` (``SET NX``: a counter another process
        started stands), then mark the day complete."""
        items = list(totals.items())
        for start in range(0, len(items), _REBUILD_CHUNK):
            pipe = self.client.pipeline(transaction=False)
            for (dim, value), total in items[start : start + _REBUILD_CHUNK]:
                pipe.set(self.key(day, dim, value), int(total), nx=True, ex=TTL_SECONDS)
            pipe.execute()
        self.client.set(self.marker(day), 1, ex=TTL_SECONDS)

    def add(self, day: str, dims: Sequence[tuple[str, str]], tokens: int) -> None:
        """Add a kept call's tokens to its counters (all of them once the day is complete)."""
        if dims and tokens:
            keys = [self.marker(day)] + [self.key(day, d, v) for d, v in dims]
            self._add(keys=keys, args=[int(tokens), TTL_SECONDS])
