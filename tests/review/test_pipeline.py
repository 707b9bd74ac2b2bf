"""ReviewPipeline: the five events in order, rule/LLM modes, fallback, AutoState, bad input."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import ValidationError

from nekoflow.errors import ConfigError
from nekoflow.events import Event, InProcessEventBus, RecordingEventBus
from nekoflow.llm.base import ChatResult, LLMBadResponseError, LLMTimeoutError
from nekoflow.review import (
    REVIEW_EVENTS,
    InMemoryAutoState,
    ReviewInput,
    ReviewPipeline,
    get_review_pipeline,
    run_rule_review,
)

INP = ReviewInput(
    conversation_id="conv_abc",
    character_id="char_xyz",
    user_id="user_123",
    group_id="g1",
    user_message="谢谢你,我好喜欢你",
    ai_reply="我也是",
)

GOOD_LLM_REVIEW = {
    "should_write_memory": True,
    "memory_items": [
        {
            "target": "user",
            "mem_type": "relationship",
            "title": "表白",
            "content": "用户:谢谢你,我好喜欢你\n角色:我也是",
            "importance": 1.7,
            "ttl": "long",
        }
    ],
    "relationship_delta": {"affection": 40, "trust": -9, "familiarity": 1, "reason": "表白"},
    "plot_update": None,
    "world_book_update": None,
    "scores": {
        "character_fidelity": 0.9,
        "immersion": 1.4,
        "relationship_progress": 0.8,
        "story_progress": 0.3,
        "memory_value": 0.9,
        "world_consistency": 0.85,
        "user_engagement": 0.6,
        "risk": -0.2,
    },
    "skipped": False,
}


class FakeLLM:
    """A canned ChatModel for unit tests of the pipeline's own logic."""

    name = "fake"

    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply
        self.calls: list[dict] = []

    def complete(self, messages: Sequence, *, temperature=None, max_tokens=None, json_mode=False):
        self.calls.append({"messages": list(messages), "json_mode": json_mode})
        if isinstance(self.reply, Exception):
            raise self.reply
        return ChatResult(text=self.reply, model="fake")


def test_rule_mode_emits_five_events_in_order_with_ids() -> None:
    bus = RecordingEventBus()
    out = ReviewPipeline(mode="rule", event_bus=bus, autostate=InMemoryAutoState()).run(INP)
    assert bus.types == list(REVIEW_EVENTS)
    for e in bus.events:
        assert e.source == "review_pipeline"
        assert (e.conversation_id, e.character_id, e.user_id, e.group_id) == (
            "conv_abc",
            "char_xyz",
            "user_123",
            "g1",
        )
    started, memory, rel, plot, finished = bus.events
    assert started.payload["conversation_id"] == "conv_abc"
    assert started.payload["character_id"] == "char_xyz"
    assert memory.payload["memory_value"] == out.scores.memory_value
    assert memory.payload["should_write_memory"] is out.should_write_memory
    assert rel.payload["delta"]["affection"] == out.relationship_delta.affection
    assert rel.payload["total_delta"] == 3
    assert plot.payload["story_progress"] == 0.1
    assert finished.payload["source"] == "rule"
    assert finished.payload["skipped"] is False
    assert finished.payload["fallback_reason"] is None


def test_rule_mode_equals_run_rule_review() -> None:
    cache = InMemoryAutoState()
    assert ReviewPipeline(autostate=cache).run(INP) == run_rule_review(INP, autostate=cache)


def test_dict_input_and_default_bus() -> None:
    out = ReviewPipeline(autostate=InMemoryAutoState()).run({"user_message": "再见"})
    assert out.relationship_delta.affection == -1


def test_bad_input_raises_validation_error_naming_field() -> None:
    with pytest.raises(ValidationError, match="selected_choice"):
        ReviewPipeline().run({"selected_choice": {"level": "legendary"}})


def test_bad_mode_is_config_error() -> None:
    with pytest.raises(ConfigError, match="mode"):
        ReviewPipeline(mode="magic")  # type: ignore[arg-type]


def test_bad_event_bus_is_config_error() -> None:
    with pytest.raises(ConfigError, match="event_bus"):
        ReviewPipeline(event_bus=object())  # type: ignore[arg-type]


def test_subscriber_failure_does_not_break_review() -> None:
    bus = InProcessEventBus()
    seen: list[str] = []

    def broken(_e: Event) -> None:
        raise RuntimeError("subscriber bug")

    bus.subscribe("review.*", broken)
    bus.subscribe("review.finished", lambda e: seen.append(e.type))
    ReviewPipeline(event_bus=bus, autostate=InMemoryAutoState()).run(INP)
    assert seen == ["review.finished"]


def test_llm_mode_validates_clamps_and_feeds_autostate() -> None:
    cache = InMemoryAutoState()
    llm = FakeLLM("```json\n" + json.dumps(GOOD_LLM_REVIEW, ensure_ascii=False) + "\n```")
    bus = RecordingEventBus()
    out = ReviewPipeline(mode="llm", event_bus=bus, llm=llm, autostate=cache).run(INP)
    assert llm.calls[0]["json_mode"] is True
    assert "谢谢你,我好喜欢你" in llm.calls[0]["messages"][-1]["content"]
    assert out.source == "llm" and out.fallback_reason is None
    assert out.relationship_delta.affection == 5 and out.relationship_delta.trust == -5
    assert out.scores.immersion == 1.0 and out.scores.risk == 0.0
    assert out.memory_items[0].importance == 1.0
    assert bus.types == list(REVIEW_EVENTS)
    assert bus.events[-1].payload["source"] == "llm"
    cached = cache.get("char_xyz", "user_123", "conv_abc")
    assert cached == {
        "character_fidelity": 0.9,
        "immersion": 1.0,
        "world_consistency": 0.85,
        "risk": 0.0,
    }
    # the rule review now reads those quality scores
    rule = run_rule_review(INP, autostate=cache)
    assert rule.scores.character_fidelity == 0.9 and rule.scores.world_consistency == 0.85


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (LLMTimeoutError("timed out"), "LLM call failed: LLMTimeoutError"),
        (LLMBadResponseError("no choices"), "LLM call failed: LLMBadResponseError"),
        ("I think this turn is nice.", "no JSON object"),
        ("{not json}", "not valid JSON"),
        ("[1, 2]", "not an object"),
        (json.dumps({"plot_update": {"level": "epic"}}), "plot_update.level"),
        (json.dumps({"memory_items": [{"target": "nobody"}]}), "memory_items.0.target"),
        (json.dumps({"scores": {"risk": "high"}}), "scores.risk"),
        (json.dumps({"relationship_delta": {"trust": "NaN"}}), "relationship_delta.trust"),
    ],
)
def test_llm_failures_fall_back_to_rules_with_reason(reply, reason: str) -> None:
    cache = InMemoryAutoState()
    bus = RecordingEventBus()
    out = ReviewPipeline(mode="llm", event_bus=bus, llm=FakeLLM(reply), autostate=cache).run(INP)
    assert out.source == "rule"
    assert reason in out.fallback_reason
    expected = run_rule_review(INP, autostate=InMemoryAutoState())
    assert out.model_dump(exclude={"fallback_reason"}) == expected.model_dump(
        exclude={"fallback_reason"}
    )
    assert bus.types == list(REVIEW_EVENTS)
    assert reason in bus.events[-1].payload["fallback_reason"]
    assert cache.get("char_xyz", "user_123", "conv_abc") is None


def test_llm_flag_and_items_kept_consistent() -> None:
    only_flag = {"should_write_memory": True, "memory_items": []}
    out = ReviewPipeline(
        mode="llm", llm=FakeLLM(json.dumps(only_flag)), autostate=InMemoryAutoState()
    ).run(INP)
    assert out.should_write_memory is False
    items_no_flag = {"should_write_memory": False, "memory_items": [{"title": "x"}]}
    out = ReviewPipeline(
        mode="llm", llm=FakeLLM(json.dumps(items_no_flag)), autostate=InMemoryAutoState()
    ).run(INP)
    assert out.memory_items == []


def test_llm_cannot_claim_to_be_fallback() -> None:
    sneaky = {"source": "rule", "fallback_reason": "lies"}
    out = ReviewPipeline(
        mode="llm", llm=FakeLLM(json.dumps(sneaky)), autostate=InMemoryAutoState()
    ).run(INP)
    assert out.source == "llm" and out.fallback_reason is None


def test_get_review_pipeline_uses_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from nekoflow.settings import get_settings

    monkeypatch.setenv("NEKOFLOW_REVIEW_MODE", "llm")
    get_settings.cache_clear()
    try:
        bus = RecordingEventBus()
        p = get_review_pipeline(event_bus=bus)
        assert p.mode == "llm" and p.event_bus is bus
        monkeypatch.delenv("NEKOFLOW_REVIEW_MODE")
        get_settings.cache_clear()
        assert get_review_pipeline().mode == "rule"
    finally:
        get_settings.cache_clear()


class AsyncBus:
    """An event bus whose emit is a coroutine function (e.g. an asyncio publisher)."""

    def __init__(self, fail: bool = False) -> None:
        self.types: list[str] = []
        self.fail = fail

    async def emit(self, event: Any) -> None:
        if self.fail:
            raise RuntimeError("publisher down")
        self.types.append(event.type)


def test_an_async_event_bus_gets_all_five_events_in_order() -> None:
    from nekoflow.review import REVIEW_EVENTS, InMemoryAutoState, ReviewPipeline

    bus = AsyncBus()
    ReviewPipeline(event_bus=bus, autostate=InMemoryAutoState()).run({"user_message": "嗯"})
    assert bus.types == list(REVIEW_EVENTS)


def test_an_async_event_bus_inside_a_running_loop() -> None:
    import asyncio

    from nekoflow.review import REVIEW_EVENTS, InMemoryAutoState, ReviewPipeline

    bus = AsyncBus()

    async def main() -> None:
        ReviewPipeline(event_bus=bus, autostate=InMemoryAutoState()).run({"user_message": "嗯"})
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(main())
    assert bus.types == list(REVIEW_EVENTS)


def test_a_failing_async_event_bus_never_breaks_the_review() -> None:
    from nekoflow.review import InMemoryAutoState, ReviewPipeline

    out = ReviewPipeline(event_bus=AsyncBus(fail=True), autostate=InMemoryAutoState()).run(
        {"user_message": "谢谢"}
    )
    assert out.relationship_delta.trust == 1


def test_an_llm_review_says_it_started_before_the_model_is_asked() -> None:
    bus = RecordingEventBus()
    seen_at_call: list[list[str]] = []

    class Watching(FakeLLM):
        def complete(self, messages: Sequence, **kwargs):
            seen_at_call.append(list(bus.types))
            return super().complete(messages, **kwargs)

    llm = Watching(json.dumps(GOOD_LLM_REVIEW, ensure_ascii=False))
    ReviewPipeline(mode="llm", event_bus=bus, llm=llm, autostate=InMemoryAutoState()).run(INP)
    assert seen_at_call == [["review.started"]]
    assert bus.types == list(REVIEW_EVENTS)
