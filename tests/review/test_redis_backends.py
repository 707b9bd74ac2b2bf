"""The Redis event bus and the Redis AutoState cache, against the real Redis."""

from __future__ import annotations

import uuid
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from nekoflow.events import Event, FanoutEventBus, RecordingEventBus
from nekoflow.events_redis import RedisEventBus
from nekoflow.review import REVIEW_EVENTS, ReviewInput, ReviewPipeline, run_rule_review
from nekoflow.review.autostate_redis import RedisAutoState


def test_review_events_published_to_redis(redis_client: redis.Redis) -> None:
    bus = RedisEventBus(redis_client, prefix="t")
    with bus.subscribe("review.*") as sub:
        cache = RedisAutoState(redis_client, prefix="t")
        ReviewPipeline(event_bus=bus, autostate=cache).run(
            ReviewInput(conversation_id="c1", character_id="k", user_id="u", user_message="谢谢")
        )
        received = [sub.get(timeout=2) for _ in REVIEW_EVENTS]
    assert [e.type for e in received] == list(REVIEW_EVENTS)
    assert all(e.conversation_id == "c1" for e in received)
    assert received[-1].payload["source"] == "rule"


def test_pattern_filters_event_types(redis_client: redis.Redis) -> None:
    bus = RedisEventBus(redis_client, prefix="t")
    with bus.subscribe("review.finished") as sub:
        bus.emit(Event(type="review.started"))
        bus.emit(Event(type="review.finished", payload={"n": 1}))
        got = sub.get(timeout=2)
        assert got is not None and got.type == "review.finished" and got.payload == {"n": 1}
        assert sub.get(timeout=0.2) is None


def test_unreachable_redis_never_raises_into_pipeline() -> None:
    dead = redis.Redis(
        host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0)
    )
    local = RecordingEventBus()
    bus = FanoutEventBus(RedisEventBus(dead), local)
    out = ReviewPipeline(event_bus=bus).run(ReviewInput(user_message="嗯"))
    assert out.relationship_delta is not None
    assert local.types == list(REVIEW_EVENTS)


def test_redis_autostate_round_trip_and_isolation(redis_client: redis.Redis) -> None:
    cache = RedisAutoState(redis_client, prefix="t", ttl_seconds=60)
    assert cache.get("c", "u", "v") is None
    cache.set(
        "c",
        "u",
        "v",
        {
            "character_fidelity": 0.7,
            "immersion": 2.0,
            "risk": 0.2,
            "world_consistency": 0.5,
            "story_progress": 0.9,
        },
    )
    assert cache.get("c", "u", "v") == {
        "character_fidelity": 0.7,
        "immersion": 1.0,
        "risk": 0.2,
        "world_consistency": 0.5,
    }
    assert 0 < redis_client.ttl("t:autostate:c:u:v") <= 60
    cache.set("c", "u", "v", {"risk": 0.4})
    assert cache.get("c", "u", "v") == {"risk": 0.4}
    assert cache.get("c", "u", "other") is None
    s = run_rule_review(
        ReviewInput(character_id="c", user_id="u", conversation_id="v"), autostate=cache
    ).scores
    assert s.risk == 0.4 and s.immersion == 0.0


def test_get_review_pipeline_wires_redis_from_settings(
    redis_client: redis.Redis, redis_url: str, monkeypatch
) -> None:
    from nekoflow.review import get_review_pipeline
    from nekoflow.settings import get_settings

    monkeypatch.setenv("NEKOFLOW_REDIS_URL", redis_url)
    monkeypatch.setenv("NEKOFLOW_REDIS_PREFIX", "wired")
    monkeypatch.setenv("NEKOFLOW_EVENT_BUS", "redis")
    monkeypatch.setenv("NEKOFLOW_AUTOSTATE_BACKEND", "redis")
    get_settings.cache_clear()
    try:
        pipeline = get_review_pipeline()
        assert isinstance(pipeline.event_bus, RedisEventBus)
        assert isinstance(pipeline.autostate, RedisAutoState)
        with pipeline.event_bus.subscribe("review.finished") as sub:
            pipeline.run(ReviewInput(user_message="嗯"))
            assert sub.get(timeout=2).type == "review.finished"
        pipeline.autostate.set("a", "b", "c", {"risk": 0.5})
        assert redis_client.exists("wired:autostate:a:b:c")
    finally:
        get_settings.cache_clear()


def test_a_review_publishes_its_five_events_and_an_outage_never_raises(
    redis_client: redis.Redis,
) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}"  # this test's channels only (the server is shared)
    bus = RedisEventBus(redis_client, prefix=prefix)
    sent: list[list[str]] = []  # the commands of each round trip this client makes
    real_pipeline, real_command = redis_client.pipeline, redis_client.execute_command

    def pipeline(*args: Any, **kwargs: Any) -> Any:
        pipe = real_pipeline(*args, **kwargs)
        run = pipe.execute

        def execute(*a: Any, **k: Any) -> Any:
            sent.append([str(c[0][0]) for c in pipe.command_stack])
            return run(*a, **k)

        pipe.execute = execute  # type: ignore[method-assign]
        return pipe

    def command(*args: Any, **kwargs: Any) -> Any:
        sent.append([str(args[0])])
        return real_command(*args, **kwargs)

    with RedisEventBus(redis_client, prefix=prefix).subscribe("review.*") as events:
        redis_client.pipeline = pipeline  # type: ignore[method-assign]
        redis_client.execute_command = command  # type: ignore[method-assign]
        try:
            ReviewPipeline(event_bus=bus).run(ReviewInput(conversation_id="c", user_message="谢谢"))
        finally:
            del redis_client.pipeline, redis_client.execute_command
        got = [event.type for event in (events.get(timeout=5) for _ in REVIEW_EVENTS) if event]
    assert sent == [["PUBLISH"] * 5]  # one round trip
    assert got == list(REVIEW_EVENTS)  # all five, in order
    dead = redis.Redis(
        host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0)
    )
    out = ReviewPipeline(event_bus=RedisEventBus(dead)).run(ReviewInput(user_message="嗯"))
    assert out.relationship_delta is not None
