"""Sticky / cooldown / delay in real Redis with concurrent worker processes delivering each turn."""

from __future__ import annotations

import multiprocessing as mp
import uuid
from typing import Any

import redis

from nekoflow.worldbook import (
    InMemoryCooldowns,
    WorldBook,
    WorldBookEntry,
    WorldBookRecallContext,
    match_entries_v2,
)
from nekoflow.worldbook.cooldowns import Cooldowns
from nekoflow.worldbook.redis_cooldowns import RedisCooldowns

WORKERS = 4
TURNS = ["spark", "", "", "spark", "spark", "", "spark", "flame", "", "spark"]


def _book() -> WorldBook:
    def e(entry_id: str, **rules: Any) -> WorldBookEntry:
        cooldown = rules.pop("cooldown_turns", 0)
        return WorldBookEntry(
            id=entry_id,
            keywords=["spark" if entry_id != "f" else "flame"],
            content=f"content {entry_id}",
            trigger_sources=["user"],
            cooldown_turns=cooldown,
            rules=rules,
        )

    return WorldBook(
        id="b",
        entries=[
            e("s", sticky=2, cooldown_turns=2),
            e("late", delay=4),
            e("cool", cooldown_turns=1),
            e("f", probability=50),
        ],
    )


def _run_turn(store: Cooldowns, scope: str, n: int, text: str) -> tuple[list[str], list[str]]:
    turn_id = f"turn-{n}"
    ctx = WorldBookRecallContext(latest_user_message=text, scope_id=scope, turn_id=turn_id)
    results = match_entries_v2(ctx, [_book()], cooldowns=store.snapshot(scope))
    injected = [r.entry.id for r in results]
    fresh = [r.entry.id for r in results if "sticky" not in r.trigger_sources]
    return injected, fresh


def _worker(url: str, prefix: str, scope: str, barrier: Any, out: Any) -> None:
    store = RedisCooldowns(redis.Redis.from_url(url), prefix=prefix)
    seen = []
    for n, text in enumerate(TURNS):
        barrier.wait()  # every worker delivers turn n at the same time (duplicate deliveries)
        injected, fresh = _run_turn(store, scope, n, text)
        barrier.wait()
        store.record(scope, f"turn-{n}", injected, fresh=fresh)
        barrier.wait()
        seen.append(injected)
    out.put(seen)


def test_concurrent_workers_count_each_turn_once(redis_url: str, redis_client: redis.Redis) -> None:
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    scope = "qq:private:1"
    reference = InMemoryCooldowns()
    expected = []
    for n, text in enumerate(TURNS):
        injected, fresh = _run_turn(reference, scope, n, text)
        reference.record(scope, f"turn-{n}", injected, fresh=fresh)
        expected.append(injected)
    # The sequence exercises every effect: sticky carry, cooldown after sticky, delay, probability.
    assert expected[1] == ["s"] and expected[2] == ["s"]
    assert "s" not in expected[3] and "s" not in expected[4]
    assert "late" not in expected[3] and "late" in expected[4]

    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(redis_url, prefix, scope, barrier, out))
        for _ in range(WORKERS)
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    assert all(r == expected for r in results)
    store = RedisCooldowns(redis_client, prefix=prefix)
    assert store.snapshot(scope) == reference.snapshot(scope)
    assert store.snapshot(scope).turn == len(TURNS)
