"""SPEC audit of the review: the seeds' own usage, every SPEC sentence at its edges, robustness.

Written as an outside reader of SPEC "Review" and the two review seeds would test it: seed names
(``ai_reply``, ``selected_choice`` dicts, ``real_time_context`` dicts), exact thresholds, float
sums, which text each keyword list reads, the five events, and the LLM mode's fallback.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from nekoflow.errors import ConfigError
from nekoflow.events import Event, RecordingEventBus
from nekoflow.review import (
    InMemoryAutoState,
    ReviewInput,
    ReviewKeywords,
    ReviewOutput,
    ReviewPipeline,
    get_review_pipeline,
    real_time_context,
    run_rule_review,
)
from tests.seed_data import SEED_REVIEW_INPUT

# The default lists exactly as SPEC writes them.
SPEC_TRUST = "谢谢|感谢|信任|放心|我相信你|靠你|我懂了|我明白了|承诺|约定"
SPEC_AFFECTION = "喜欢|爱|想你|好想|亲爱|宝贝|心动|感动|暖|我爱"
SPEC_NEGATIVE = "讨厌|烦死|滚|生气|失望|算了|拜拜|再见|冷漠|无聊"
TRUST, AFFECTION, NEGATIVE = (x.split("|") for x in (SPEC_TRUST, SPEC_AFFECTION, SPEC_NEGATIVE))
EVENTS = [
    "review.started",
    "review.memory.scored",
    "review.relationship.scored",
    "review.plot.scored",
    "review.finished",
]
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def review(**kw: Any) -> ReviewOutput:
    return run_rule_review(ReviewInput(**kw), autostate=InMemoryAutoState())


def gap(seconds: float) -> dict[str, Any]:
    return real_time_context(NOW - timedelta(seconds=seconds), NOW).to_dict()


class ListBus:
    """The smallest event bus SPEC allows: any object with emit(event)."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def emit(self, event: Any) -> None:
        self.events.append(event)


# --- the seeds' own code ------------------------------------------------------------------------


def test_seed_basic_usage() -> None:
    bus = ListBus()
    pipeline = get_review_pipeline(event_bus=bus)
    inp = ReviewInput(
        conversation_id="conv_abc",
        character_id="char_xyz",
        user_id="user_123",
        user_message="我今天很开心",
        ai_reply="太好了!",
    )
    output = pipeline.run(inp)
    assert isinstance(output, ReviewOutput)
    assert output.source == "rule"
    assert [e.type for e in bus.events] == EVENTS
    started = bus.events[0]
    assert started.payload["conversation_id"] == "conv_abc"
    assert started.payload["character_id"] == "char_xyz"
    # a plain chat turn: familiarity only, nothing to remember, skipped
    assert output.relationship_delta is not None
    assert output.relationship_delta.as_dict() == {
        "affection": 0,
        "trust": 0,
        "familiarity": 1,
        "dependency": 0,
        "security": 0,
        "jealousy": 0,
    }
    assert output.skipped and not output.should_write_memory and output.memory_items == []


def test_seed_review_input_example() -> None:
    out = review(**copy.deepcopy(SEED_REVIEW_INPUT))
    assert out.scores is not None
    assert out.scores.story_progress == 0.2
    assert out.plot_update is None and out.world_book_update is None
    assert out.skipped is False  # a choice was made, even a normal one


def test_seed_character_runtime_call_with_optional_parts_unset() -> None:
    # CharacterRuntime passes turn_context.selected_choice / real_time_context straight through.
    inp = ReviewInput(
        conversation_id="c",
        character_id="ch",
        user_id="u",
        user_message="谢谢",
        assistant_message="不客气",
        selected_choice=None,
        turn_context={"scene": "room"},
        real_time_context=None,
        relationship_state=None,
        recent_messages=None,
    )
    assert inp.real_time_context == {} and inp.relationship_state == {}
    assert inp.recent_messages == []
    assert run_rule_review(inp, autostate=InMemoryAutoState()).relationship_delta.trust == 1


def test_real_time_context_object_feeds_review_input_as_plain_data() -> None:
    inp = ReviewInput(real_time_context=real_time_context("2026-02-25T12:00:00Z", NOW))
    assert inp.real_time_context == {
        "continuity_level": "days",
        "elapsed_seconds": 4 * 86400.0,
        "elapsed_label": "4天",
    }
    assert type(inp.real_time_context["continuity_level"]) is str  # plain JSON-able data
    assert inp.continuity_level == "days"


# --- keyword lists: which text each reads -------------------------------------------------------


@pytest.mark.parametrize("word", TRUST)
def test_trust_word_in_user_message_only(word: str) -> None:
    assert review(user_message=f"嗯{word}嗯").relationship_delta.trust == 1
    assert review(user_message="嗯", ai_reply=word).relationship_delta.trust == 0


@pytest.mark.parametrize("word", AFFECTION)
def test_affection_word_in_user_or_assistant(word: str) -> None:
    assert review(user_message=f"嗯{word}").relationship_delta.affection == 1
    assert review(user_message="嗯", ai_reply=word).relationship_delta.affection == 1


@pytest.mark.parametrize("word", NEGATIVE)
def test_negative_word_in_user_message_only(word: str) -> None:
    assert review(user_message=word).relationship_delta.affection == -1
    assert review(user_message="嗯", ai_reply=word).relationship_delta.affection == 0


def test_affection_joins_the_two_messages_with_a_space() -> None:
    kw = ReviewKeywords(affection="a b")
    out = run_rule_review(
        ReviewInput(user_message="a", ai_reply="b"), keywords=kw, autostate=InMemoryAutoState()
    )
    assert out.relationship_delta.affection == 1


def test_custom_lists_are_case_insensitive_regex() -> None:
    kw = ReviewKeywords(trust=r"thank(s| you)", affection="LOVE", negative="bye")
    out = run_rule_review(
        ReviewInput(user_message="THANK YOU, Bye", ai_reply="i love it"),
        keywords=kw,
        autostate=InMemoryAutoState(),
    )
    d = out.relationship_delta
    assert (d.trust, d.affection) == (1, 0)  # +1 love (assistant) −1 bye (user)


def test_assistant_affection_does_not_raise_memory_value() -> None:
    out = review(user_message="嗯", ai_reply="我爱你")
    assert out.relationship_delta.affection == 1
    assert out.scores.memory_value == 0.0


# --- relationship delta and total ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "affection", "trust"),
    [("normal", 0, 0), ("important", 1, 1), ("turning_point", 2, 1), ("ending", 0, 0)],
)
def test_choice_bonuses(level: str, affection: int, trust: int) -> None:
    d = review(user_message="嗯", selected_choice={"level": level, "text": "x"}).relationship_delta
    assert (d.affection, d.trust, d.familiarity) == (affection, trust, 1)


@pytest.mark.parametrize(
    ("seconds", "familiarity"),
    [(0, 1), (1800, 1), (21600, 1), (86399, 1), (86400, 2), (604800, 2)],
)
def test_familiarity_after_real_time_gaps(seconds: int, familiarity: int) -> None:
    d = review(user_message="嗯", real_time_context=gap(seconds)).relationship_delta
    assert d.familiarity == familiarity


def test_total_delta_counts_a_negative_affection_by_its_size() -> None:
    out = review(user_message="谢谢,不过算了")  # trust +1, affection −1, familiarity 1
    assert out.relationship_delta.affection == -1
    assert out.scores.relationship_progress == pytest.approx(3 / 5)
    assert out.should_write_memory  # total 3 ≥ 3 although memory_value is only 0.2


def test_everything_at_once_caps_relationship_progress_at_one() -> None:
    out = review(
        user_message="谢谢,我爱你",
        selected_choice={"level": "turning_point", "text": "告白"},
        real_time_context=gap(10 * 86400),
    )
    d = out.relationship_delta
    assert (d.affection, d.trust, d.familiarity) == (3, 2, 2)
    assert out.scores.relationship_progress == 1.0


# --- memory value: exact sums and boundaries ----------------------------------------------------


@pytest.mark.parametrize(
    ("n", "value"), [(0, 0.0), (50, 0.0), (51, 0.2), (100, 0.2), (101, 0.3), (500, 0.3)]
)
def test_length_bonus_boundaries(n: int, value: float) -> None:
    assert review(user_message="啊" * n).scores.memory_value == value


@pytest.mark.parametrize(
    ("user", "rtc", "value"),
    [
        ("谢谢喜欢" + "啊" * 47, None, 0.6),  # 51 chars: 0.2 + 0.2 + 0.2, exactly 0.6
        ("谢谢喜欢" + "啊" * 97, None, 0.7),  # 101 chars: 0.3 + 0.2 + 0.2
        ("谢谢", 86400, 0.85),
        ("嗯", 86400, 0.65),
        ("嗯", 604800, 0.75),
        ("喜欢" + "啊" * 99, 604800, 1.0),  # 0.3 + 0.2 + 0.75 capped
        ("嗯", 86399, 0.0),  # same_day_gap adds nothing
    ],
)
def test_memory_value_sums_are_exact(user: str, rtc: int | None, value: float) -> None:
    kw: dict[str, Any] = {"user_message": user}
    if rtc is not None:
        kw["real_time_context"] = gap(rtc)
    assert review(**kw).scores.memory_value == value


@pytest.mark.parametrize(
    ("level", "value"), [("important", 0.8), ("turning_point", 0.9), ("ending", 0.95)]
)
def test_fixed_memory_values_ignore_every_bonus(level: str, value: float) -> None:
    out = review(
        user_message="谢谢我爱你" + "啊" * 200,
        selected_choice={"level": level, "text": "x"},
        real_time_context=gap(10 * 86400),
    )
    assert out.scores.memory_value == value
    assert out.memory_items[0].importance == value


# --- memory write -------------------------------------------------------------------------------


def test_value_0_6_with_total_delta_2_does_not_write() -> None:
    out = review(user_message="谢谢" + "啊" * 99)  # 0.3 + 0.2 = 0.5, total 2
    assert out.scores.memory_value == 0.5
    assert not out.should_write_memory and out.memory_items == []
    assert not out.skipped  # memory_value ≥ 0.3


def test_days_gap_alone_writes_at_exactly_0_65() -> None:
    out = review(user_message="我回来了", ai_reply="欢迎回来", real_time_context=gap(86400))
    assert out.scores.memory_value == 0.65
    assert out.should_write_memory
    [item] = out.memory_items
    assert item.content == "现实时间间隔:1天\n用户:我回来了\n角色:欢迎回来"
    assert (item.mem_type, item.ttl, item.target) == ("short", "short", "user")


def test_ending_memory_item() -> None:
    out = review(user_message="再见了", ai_reply="保重", selected_choice={"level": "ending"})
    [item] = out.memory_items
    assert (item.mem_type, item.ttl, item.importance) == ("short", "long", 0.95)
    assert item.title == "再见了"  # no choice text → user message
    assert out.plot_update.should_create_node and out.plot_update.level == "ending"
    assert out.world_book_update.should_update
    assert out.scores.story_progress == 1.0


def test_turning_point_memory_item_uses_the_choice_text_as_title() -> None:
    text = "推开那扇一直紧闭的门,走进从未有人踏足的房间,然后发现了真相"
    out = review(user_message="走", selected_choice={"level": "turning_point", "text": text})
    [item] = out.memory_items
    assert item.title == text[:30]
    assert (item.mem_type, item.ttl) == ("event", "long")


def test_no_text_no_memory_even_on_a_turning_point() -> None:
    out = review(selected_choice={"level": "turning_point", "text": "x"})
    assert not out.should_write_memory and out.memory_items == []
    assert out.plot_update is not None  # the plot still moved
    out = review(user_message="   ", ai_reply="\n", real_time_context=gap(10 * 86400))
    assert not out.should_write_memory


@pytest.mark.parametrize(
    ("seconds", "line"),
    [
        (None, None),
        (60, None),
        (1800, "现实时间间隔:30分钟"),
        (7 * 3600, "现实时间间隔:7小时"),
        (2 * 86400 + 3 * 3600, "现实时间间隔:2天3小时"),
        (30 * 86400, "现实时间间隔:30天"),
    ],
)
def test_time_gap_line_only_when_there_was_a_gap(seconds: int | None, line: str | None) -> None:
    rtc = real_time_context(None, NOW).to_dict() if seconds is None else gap(seconds)
    out = review(
        user_message="谢谢你,我很喜欢", ai_reply="嗯", real_time_context=rtc
    )  # total 3 → write
    [item] = out.memory_items
    expected = "用户:谢谢你,我很喜欢\n角色:嗯"
    assert item.content == (f"{line}\n{expected}" if line else expected)


# --- skipped ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "skipped"),
    [
        ({"user_message": "吃了吗"}, True),
        ({"user_message": "谢谢"}, True),  # 0.2 < 0.3, total 2
        ({"user_message": "啊" * 101}, False),  # 0.3 is not < 0.3
        ({"user_message": "嗯", "selected_choice": {"level": "normal"}}, False),
        ({"user_message": "嗯", "selected_choice": {"text": "no level"}}, True),
        ({"user_message": "嗯", "real_time_context": gap(86400)}, False),
        ({"user_message": "嗯", "real_time_context": gap(86399)}, True),
        ({"user_message": "谢谢,算了"}, False),  # writes (total 3)
    ],
)
def test_skip_rule(kw: dict[str, Any], skipped: bool) -> None:
    assert review(**kw).skipped is skipped


# --- scores -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "value"), [(30, 0.3), (31, 0.5), (80, 0.5), (81, 0.7), (200, 0.7), (201, 0.9)]
)
def test_user_engagement_by_length(n: int, value: float) -> None:
    assert review(user_message="字" * n).scores.user_engagement == value


class BrokenAutoState:
    """An AutoState whose backend is down."""

    def get(self, *_: str) -> dict[str, float] | None:
        raise ConnectionError("cache unreachable")

    def set(self, *_: Any) -> None:
        raise ConnectionError("cache unreachable")


def test_quality_scores_are_zero_when_the_autostate_cache_is_down() -> None:
    out = run_rule_review(ReviewInput(user_message="谢谢"), autostate=BrokenAutoState())
    s = out.scores
    assert (s.character_fidelity, s.immersion, s.world_consistency, s.risk) == (0, 0, 0, 0)
    assert out.relationship_delta.trust == 1


# --- events -------------------------------------------------------------------------------------


def test_events_on_a_duck_typed_bus_carry_type_source_ids_and_payload() -> None:
    bus = ListBus()
    inp = ReviewInput(
        conversation_id=42,
        character_id="ch",
        user_id=10001,
        group_id=777,
        user_message="谢谢",
        ai_reply="嗯",
    )
    out = ReviewPipeline(mode="rule", event_bus=bus, autostate=InMemoryAutoState()).run(inp)
    assert [e.type for e in bus.events] == EVENTS
    for e in bus.events:
        assert isinstance(e, Event)
        assert e.source
        assert (e.conversation_id, e.character_id, e.user_id, e.group_id) == (
            "42",
            "ch",
            "10001",
            "777",
        )
        assert isinstance(e.payload, dict)
    finished = bus.events[-1]
    assert finished.payload["skipped"] is out.skipped
    assert finished.payload["source"] == "rule"


def test_a_falsy_event_bus_still_gets_every_event() -> None:
    class EmptyLooking(ListBus):
        def __len__(self) -> int:
            return 0

    bus = EmptyLooking()
    ReviewPipeline(event_bus=bus, autostate=InMemoryAutoState()).run({"user_message": "嗯"})
    assert [e.type for e in bus.events] == EVENTS


def test_a_failing_event_bus_never_breaks_the_review() -> None:
    class Exploding:
        def emit(self, event: Any) -> None:
            raise RuntimeError("bus down")

    out = ReviewPipeline(event_bus=Exploding(), autostate=InMemoryAutoState()).run(
        {"user_message": "谢谢"}
    )
    assert out.relationship_delta.trust == 1


def test_events_in_llm_mode_are_the_same_five() -> None:
    bus = RecordingEventBus()
    ReviewPipeline(
        mode="llm", event_bus=bus, llm=lambda _m: "{}", autostate=InMemoryAutoState()
    ).run({"user_message": "嗯"})
    assert bus.types == EVENTS
    assert bus.events[-1].payload["source"] == "llm"


# --- LLM mode: any failure falls back; duck-typed clients ---------------------------------------

REVIEW_JSON = {
    "should_write_memory": False,
    "relationship_delta": {"affection": 2, "trust": 1, "familiarity": 1, "reason": "ok"},
    "scores": {"character_fidelity": 0.7, "immersion": 0.6, "world_consistency": 0.5, "risk": 0.2},
    "skipped": False,
}


class ChatClient:
    """The seed's LLMReview shape: ``llm.chat(prompt)``."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.prompts: list[Any] = []

    def chat(self, prompt: Any) -> Any:
        self.prompts.append(prompt)
        return self.reply


class AsyncChatClient(ChatClient):
    async def chat(self, prompt: Any) -> Any:  # type: ignore[override]
        self.prompts.append(prompt)
        return self.reply


@pytest.mark.parametrize(
    "llm",
    [
        ChatClient(json.dumps(REVIEW_JSON)),
        AsyncChatClient(json.dumps(REVIEW_JSON)),
        ChatClient(REVIEW_JSON),
        lambda _messages: json.dumps(REVIEW_JSON),
    ],
    ids=["chat-text", "async-chat", "chat-dict", "callable"],
)
def test_llm_clients_of_the_seeds_shape_work(llm: Any) -> None:
    cache = InMemoryAutoState()
    inp = ReviewInput(conversation_id="v", character_id="c", user_id="u", user_message="嗯")
    out = ReviewPipeline(mode="llm", llm=llm, autostate=cache).run(inp)
    assert out.source == "llm" and out.fallback_reason is None
    assert out.relationship_delta.affection == 2
    # its quality scores feed AutoState, which the rule review then reads
    rule = run_rule_review(inp, autostate=cache)
    assert (rule.scores.character_fidelity, rule.scores.risk) == (0.7, 0.2)


class RaisingLLM:
    name = "raising"

    def complete(self, messages: Any, **_: Any) -> Any:
        raise RuntimeError("socket closed")


@pytest.mark.parametrize(
    ("llm", "reason"),
    [
        (RaisingLLM(), "LLM call failed: RuntimeError"),
        (ChatClient(12345), "not text"),
        (ChatClient("totally not json"), "no JSON object"),
        (ChatClient(json.dumps({"relationship_delta": {"trust": "lots"}})), "trust"),
    ],
)
def test_any_llm_failure_falls_back_to_the_rule_review_and_says_why(llm: Any, reason: str) -> None:
    cache = InMemoryAutoState()
    bus = RecordingEventBus()
    inp = ReviewInput(conversation_id="v", character_id="c", user_id="u", user_message="谢谢")
    out = ReviewPipeline(mode="llm", event_bus=bus, llm=llm, autostate=cache).run(inp)
    assert out.source == "rule"
    assert reason in out.fallback_reason
    assert out.relationship_delta.trust == 1
    assert bus.types == EVENTS
    assert reason in bus.events[-1].payload["fallback_reason"]
    assert cache.get("c", "u", "v") is None


def test_llm_mode_survives_a_broken_autostate_store() -> None:
    out = ReviewPipeline(
        mode="llm", llm=lambda _m: json.dumps(REVIEW_JSON), autostate=BrokenAutoState()
    ).run({"user_message": "嗯"})
    assert out.source == "llm"


def test_llm_that_cannot_be_called_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="llm") as ei:
        ReviewPipeline(mode="llm", llm=object())  # type: ignore[arg-type]
    assert ei.value.field == "llm"


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"selected_choice": {"level": "epic"}}, "selected_choice"),
        ({"real_time_context": {"continuity_level": "forever"}}, "real_time_context"),
        ({"user_message": None}, "user_message"),
        ({"selected_choice": "important"}, "selected_choice"),
        # unhashable values: a ValidationError, not the TypeError of a membership test
        ({"selected_choice": {"level": ["important"]}}, "selected_choice"),
        ({"selected_choice": {"level": {"x": 1}}}, "selected_choice"),
        ({"real_time_context": {"continuity_level": {}}}, "real_time_context"),
        ({"real_time_context": {"continuity_level": ["days"]}}, "real_time_context"),
        ({"selected_choice": {"level": 3}}, "selected_choice"),
    ],
)
def test_bad_review_input_names_the_field(kw: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        ReviewPipeline(autostate=InMemoryAutoState()).run(kw)


# --- LLM mode: a valid but partial answer is completed from the rule review -----------------------


def test_llm_answer_without_delta_or_scores_gets_the_rules_numbers() -> None:
    inp = {"conversation_id": "v", "character_id": "c", "user_id": "u", "user_message": "谢谢你"}
    out = ReviewPipeline(mode="llm", llm=lambda _m: "{}", autostate=InMemoryAutoState()).run(inp)
    assert out.source == "llm" and out.fallback_reason is None
    # SPEC: "a delta is always produced" — the model said nothing, so the rules' delta stands
    assert out.relationship_delta.as_dict()["trust"] == 1
    assert out.relationship_delta.familiarity == 1
    assert out.scores.memory_value == 0.2 and out.scores.user_engagement == 0.3


def test_llm_scores_it_gave_win_and_the_rest_come_from_the_rules() -> None:
    cache = InMemoryAutoState()
    reply = {"scores": {"immersion": 3, "risk": -1}, "relationship_delta": {"affection": 99}}
    inp = ReviewInput(conversation_id="v", character_id="c", user_id="u", user_message="谢谢你")
    out = ReviewPipeline(mode="llm", llm=lambda _m: json.dumps(reply), autostate=cache).run(inp)
    assert out.source == "llm"
    assert (out.scores.immersion, out.scores.risk) == (1.0, 0.0)  # clamped
    assert out.scores.memory_value == 0.2  # not given → the rules' value, not 0.0
    assert out.scores.relationship_progress == 0.4
    assert out.relationship_delta.affection == 5  # clamped; a given delta is the model's own
    assert out.relationship_delta.trust == 0
    assert cache.get("c", "u", "v") == {
        "character_fidelity": 0.0,
        "immersion": 1.0,
        "world_consistency": 0.0,
        "risk": 0.0,
    }


def test_llm_memory_items_without_the_flag_are_written() -> None:
    reply = {"memory_items": [{"title": "约定", "content": "用户:明天见", "importance": 0.9}]}
    out = ReviewPipeline(
        mode="llm", llm=lambda _m: json.dumps(reply), autostate=InMemoryAutoState()
    ).run({"user_message": "明天见"})
    assert out.should_write_memory and out.memory_items[0].title == "约定"
    reply["should_write_memory"] = False  # an explicit "no" still wins
    out = ReviewPipeline(
        mode="llm", llm=lambda _m: json.dumps(reply), autostate=InMemoryAutoState()
    ).run({"user_message": "明天见"})
    assert not out.should_write_memory and out.memory_items == []


def test_gap_line_label_from_elapsed_seconds_when_no_label_is_given() -> None:
    rtc = {"continuity_level": "days", "elapsed_seconds": 90000}
    out = review(user_message="我回来了", ai_reply="欢迎回来", real_time_context=rtc)
    assert out.memory_items[0].content == "现实时间间隔:1天1小时\n用户:我回来了\n角色:欢迎回来"
    out = review(user_message="我回来了", real_time_context={"continuity_level": "days"})
    assert out.memory_items[0].content.startswith("现实时间间隔:days\n")


class OddAutoState:
    """A cache holding values a rule review must survive."""

    def get(self, *_: str) -> dict[str, Any]:
        return {
            "immersion": None,
            "risk": "x",
            "character_fidelity": float("nan"),
            "world_consistency": "0.4",
        }

    def set(self, *_: Any) -> None:
        pass


def test_unusable_cached_quality_values_count_as_zero() -> None:
    out = run_rule_review(ReviewInput(user_message="嗯"), autostate=OddAutoState())
    s = out.scores
    assert (s.immersion, s.risk, s.character_fidelity, s.world_consistency) == (0.0, 0.0, 0.0, 0.4)
