"""Cooldown counters in Redis, shared by every worker; ``record`` is one atomic Lua script.

Layout per scope (the ``{scope}`` hash tag keeps both keys in one cluster slot):

* ``{prefix}:worldbook:cooldown:{<scope_id>}`` — hash: ``#turn`` (committed turns),
  ``last:<entry_id>`` (turn of the last injection), ``count:<entry_id>`` (injections),
  ``start:<entry_id>`` (turn of the last fresh activation: the sticky window's start);
* ``{prefix}:worldbook:cooldown:{<scope_id>}:turns`` — sorted set of recorded turn ids (score =
  turn number), trimmed to the last ``remembered_turns``, so a retried turn counts once.

Both keys expire ``ttl_seconds`` after the scope's last committed turn (``None`` = never).
"""

from __future__ import annotations

from collections.abc import Iterable

import redis

from nekoflow.worldbook.cooldowns import (
    DEFAULT_REMEMBERED_TURNS,
    CooldownState,
    Injected,
    check_ids,
    injected_ids,
)

_RECORD = """
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  return 0
end
local turn = redis.call('HINCRBY', KEYS[1], '#turn', 1)
redis.call('ZADD', KEYS[2], turn, ARGV[1])
local keep = tonumber(ARGV[2])
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -keep - 1)
local n_injected = tonumber(ARGV[4])
for i = 5, 4 + n_injected do
  redis.call('HSET', KEYS[1], 'last:' .. ARGV[i], turn)
  redis.call('HINCRBY', KEYS[1], 'count:' .. ARGV[i], 1)
end
for i = 5 + n_injected, #ARGV do
  redis.call('HSET', KEYS[1], 'start:' .. ARGV[i], turn)
end
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  redis.call('EXPIRE', KEYS[1], ttl)
  redis.call('EXPIRE', KEYS[2], ttl)
end
return turn
"""

DEFAULT_TTL_SECONDS = 30 * 24 * 3600


class RedisCooldowns:
    """:class:`~nekoflow.worldbook.cooldowns.Cooldowns` backed by Redis (atomic across workers)."""

    def __init__(
        self,
        redis_client: redis.Redis,
        *,
        prefix: str = "nekoflow",
        ttl_seconds: int | None = DEFAULT_TTL_SECONDS,
        remembered_turns: int = DEFAULT_REMEMBERED_TURNS,
    ) -> None:
        self._r = redis_client
        self._prefix = prefix
        self._ttl = ttl_seconds or 0
        self._remembered = max(1, remembered_turns)
        self._record = redis_client.register_script(_RECORD)

    def _key(self, scope_id: str) -> str:
        return f"{self._prefix}:worldbook:cooldown:{{{scope_id}}}"

    def snapshot(self, scope_id: str) -> CooldownState:
        """The scope's counters now (an empty state for an unknown scope)."""
        raw = self._r.hgetall(self._key(scope_id))
        turn = 0
        last: dict[str, int] = {}
        count: dict[str, int] = {}
        start: dict[str, int] = {}
        for k, v in raw.items():
            name = k.decode() if isinstance(k, bytes) else str(k)
            value = int(v)
            if name == "#turn":
                turn = value
            elif name.startswith("last:"):
                last[name[5:]] = value
            elif name.startswith("count:"):
                count[name[6:]] = value
            elif name.startswith("start:"):
                start[name[6:]] = value
        return CooldownState(turn=turn, last_injected=last, injections=count, activated=start)

    def record(
        self,
        scope_id: str,
        turn_id: str,
        injected: Iterable[Injected],
        *,
        fresh: Iterable[Injected] | None = None,
    ) -> bool:
        """Count a committed turn and its injections; False if ``turn_id`` was already counted.

        ``fresh``: the injected entries activated afresh (sticky windows start); None = none.
        """
        check_ids(scope_id, turn_id)
        key = self._key(scope_id)
        ids = injected_ids(injected)
        fresh_ids = [] if fresh is None else injected_ids(fresh)
        result = self._record(
            keys=[key, f"{key}:turns"],
            args=[turn_id, self._remembered, self._ttl, len(ids), *ids, *fresh_ids],
        )
        return int(result) > 0
