"""Cooldown stores: the in-process one and the Redis one (real Redis), same contract."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
import redis

from nekoflow.errors import InputError
from nekoflow.worldbook import (
    Cooldowns,
    CooldownState,
    InMemoryCooldowns,
    WorldBook,
    WorldBookEntry,
    WorldBookRecallContext,
    match_entries_v2,
)
from nekoflow.worldbook.cooldowns import blocked_ids
from nekoflow.worldbook.redis_cooldowns import RedisCooldowns


@pytest.fixture(params=["memory", "redis"])
def make_store(request: pytest.FixtureRequest) -> Callable[..., Cooldowns]:
    if request.param == "memory":
        return lambda **kw: InMemoryCooldowns(**kw)
    client: redis.Redis = request.getfixturevalue("redis_client")
    return lambda **kw: RedisCooldowns(client, prefix="t", **kw)


def test_record_counts_turns_and_injections(make_store: Callable[..., Cooldowns]) -> None:
    store = make_store()
    assert store.snapshot("s") == CooldownState()
    assert store.record("s", "t1", ["a", "b", WorldBookEntry(id="c"), WorldBookEntry()])
    assert store.record("s", "t2", [])
    assert store.record("s", "t3", ["a", "a"])  # one entry injected once per turn
    snap = store.snapshot("s")
    assert snap.turn == 3
    assert snap.last_injected == {"a": 3, "b": 1, "c": 1}
    assert snap.injections == {"a": 2, "b": 1, "c": 1}
    assert store.snapshot("other") == CooldownState()


def test_same_turn_recorded_twice_counts_once(make_store: Callable[..., Cooldowns]) -> None:
    store = make_store()
    assert store.record("s", "t1", ["a"]) is True
    assert store.record("s", "t1", ["a", "b"]) is False
    assert store.snapshot("s") == CooldownState(turn=1, last_injected={"a": 1}, injections={"a": 1})
    # turn ids are per scope
    assert store.record("s2", "t1", ["a"]) is True


def test_remembered_turns_are_bounded(make_store: Callable[..., Cooldowns]) -> None:
    store = make_store(remembered_turns=2)
    for t in ("t1", "t2", "t3"):
        store.record("s", t, [])
    assert store.record("s", "t3", []) is False
    assert store.record("s", "t1", []) is True  # forgotten: counts again
    assert store.snapshot("s").turn == 4


def test_concurrent_recorders_agree(make_store: Callable[..., Cooldowns]) -> None:
    store = make_store()
    barrier = threading.Barrier(8)

    def worker(n: int) -> None:
        barrier.wait()
        for t in range(25):
            # every turn is recorded by two workers (a retried task): it must count once
            store.record("s", f"turn-{(n // 2) * 25 + t}", ["shared", f"w{n // 2}"])

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    snap = store.snapshot("s")
    assert snap.turn == 100
    assert snap.injections["shared"] == 100
    assert {snap.injections[f"w{k}"] for k in range(4)} == {25}
    assert snap.last_injected["shared"] == 100


def test_bad_ids_are_rejected(make_store: Callable[..., Cooldowns]) -> None:
    store = make_store()
    with pytest.raises(InputError) as err:
        store.record("", "t", [])
    assert err.value.field == "scope_id"
    with pytest.raises(InputError) as err:
        store.record("s", "", [])
    assert err.value.field == "turn_id"
    with pytest.raises(InputError) as err:
        store.record("s", "t", [3])  # type: ignore[list-item]
    assert err.value.field == "injected"
    assert store.snapshot("s").turn == 0


def test_matcher_with_store_blocks_for_the_window(make_store: Callable[..., Cooldowns]) -> None:
    store = make_store()
    entry = WorldBookEntry(id="e", keywords=["k"], content="c", cooldown_turns=1)
    book = WorldBook(entries=[entry])
    ctx = WorldBookRecallContext(latest_user_message="k", scope_id="scope")
    assert blocked_ids(store, "scope", [entry]) == set()
    store.record("scope", "t1", match_entries_v2(ctx, [book], cooldowns=store))
    assert blocked_ids(store, "scope", [entry]) == {"e"}
    assert match_entries_v2(ctx, [book], cooldowns=store) == []
    store.record("scope", "t2", [])
    assert len(match_entries_v2(ctx, [book], cooldowns=store)) == 1


def test_state_rules() -> None:
    state = CooldownState(turn=5, last_injected={"a": 5, "b": 3}, injections={"a": 1, "b": 3})
    cool2 = WorldBookEntry(id="a", cooldown_turns=2)
    assert state.blocks(cool2)
    assert not state.blocks(WorldBookEntry(id="b", cooldown_turns=2))  # next turn 6: 6-3 > 2
    assert state.blocks(WorldBookEntry(id="b", cooldown_turns=3))
    assert state.blocks(WorldBookEntry(id="b", max_injections_per_session=3))
    assert not state.blocks(WorldBookEntry(id="b", max_injections_per_session=4))
    assert not state.blocks(WorldBookEntry(cooldown_turns=9))  # no id: not tracked
    assert not state.blocks(WorldBookEntry(id="a"))  # no cooldown configured
    assert CooldownState.model_validate_json(state.model_dump_json()) == state


def test_redis_keys_expire_and_are_prefixed(redis_client: redis.Redis) -> None:
    store = RedisCooldowns(redis_client, prefix="p", ttl_seconds=100)
    store.record("s", "t1", ["a"])
    keys = sorted(k.decode() for k in redis_client.keys("*"))
    assert keys == ["p:worldbook:cooldown:{s}", "p:worldbook:cooldown:{s}:turns"]
    assert 0 < redis_client.ttl("p:worldbook:cooldown:{s}") <= 100
    forever = RedisCooldowns(redis_client, prefix="q", ttl_seconds=None)
    forever.record("s", "t1", [])
    assert redis_client.ttl("q:worldbook:cooldown:{s}") == -1
