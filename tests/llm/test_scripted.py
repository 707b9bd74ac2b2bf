"""ScriptedChatModel: deterministic, in-character, responsive, review JSON, injected failures."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nekoflow.errors import ConfigError, InputError
from nekoflow.llm import (
    ChatModel,
    LLMError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
    ScriptedChatModel,
)
from nekoflow.llm.scripted import detect_intent, echo_of
from nekoflow.memory import parse_reply
from nekoflow.review import ReviewInput, ReviewPipeline
from nekoflow.review.llm_review import build_messages, parse_review

SYSTEM = {"role": "system", "content": "你叫钦灵,进行角色扮演"}

# one segment: 【emotion】content, then optional <tts>, then optional (action)
SEGMENT = r"【[^【】<>()]+】[^【】<>()]+(?:<[^【】<>()]+>)?(?:\([^【】<>()]+\))?"
REPLY = re.compile(rf"(?:{SEGMENT}){{1,3}}")


def ask(model: ScriptedChatModel, text: str, **kwargs: Any) -> str:
    return model.complete([SYSTEM, {"role": "user", "content": text}], **kwargs).text


def test_is_a_chat_model_and_says_it_is_not_a_real_one() -> None:
    model = ScriptedChatModel()
    assert isinstance(model, ChatModel)
    assert model.name == "scripted"
    doc = (ScriptedChatModel.__doc__ or "").lower()
    assert "default" in doc
    assert "not a real" in doc
    result = model.complete([{"role": "user", "content": "你好"}])
    assert result.model == "scripted"


def test_same_input_same_reply_across_instances() -> None:
    messages = [SYSTEM, {"role": "user", "content": "今天作业写完了吗?"}]
    first = ScriptedChatModel(seed=3).complete(messages)
    second = ScriptedChatModel(seed=3).complete(messages)
    assert first.text == second.text
    assert first.prompt_tokens == second.prompt_tokens


VARIED = [
    "你好呀钦灵",
    "早上好!",
    "谢谢你陪我",
    "我好喜欢你",
    "讨厌,你真烦",
    "今天天气怎么样?",
    "我今天去了公园",
    "晚安,明天见",
    "你最喜欢吃什么?",
    "作业写完了",
    "hello there",
    "thank you so much",
    "I love you",
    "I hate mondays",
    "what are you doing?",
    "I went to the beach today",
    "goodbye for now",
    "新的老师可严格了",
    "我们去看电影吧",
    "这本书很好看",
]


def test_different_messages_get_different_replies() -> None:
    model = ScriptedChatModel()
    replies = [ask(model, text) for text in VARIED]
    assert len(set(replies)) == len(VARIED)


def test_seed_changes_the_replies() -> None:
    a, b = ScriptedChatModel(seed=1), ScriptedChatModel(seed=2)
    assert [ask(a, t) for t in VARIED] != [ask(b, t) for t in VARIED]


def test_system_prompt_is_part_of_the_input() -> None:
    model = ScriptedChatModel()
    replies = {
        model.complete(
            [{"role": "system", "content": f"你叫角色{i}"}, {"role": "user", "content": "嗨"}]
        ).text
        for i in range(12)
    }
    assert len(replies) > 1


def test_replies_use_the_character_format_and_parse_back() -> None:
    model = ScriptedChatModel()
    for text in VARIED:
        reply = ask(model, text)
        assert REPLY.fullmatch(reply), reply
        segments = parse_reply(reply)
        assert 1 <= len(segments) <= 3
        assert all(seg.emotion and seg.content for seg in segments)


def test_tts_and_action_are_optional() -> None:
    model = ScriptedChatModel()
    segments = [seg for t in VARIED for seg in parse_reply(ask(model, t))]
    assert any(seg.tts for seg in segments)
    assert any(not seg.tts for seg in segments)
    assert any(seg.action for seg in segments)
    assert any(not seg.action for seg in segments)


def test_segment_count_varies_between_one_and_three() -> None:
    model = ScriptedChatModel()
    counts = {len(parse_reply(ask(model, f"第{i}件事"))) for i in range(40)}
    assert counts == {1, 2, 3}


@pytest.mark.parametrize(
    ("text", "intent", "emotions"),
    [
        ("你好呀", "greeting", {"开心", "高兴", "惊喜"}),
        ("hi, nice to meet you", "greeting", {"开心", "高兴", "惊喜"}),
        ("谢谢你", "thanks", {"害羞", "开心", "感动"}),
        ("thanks a lot", "thanks", {"害羞", "开心", "感动"}),
        ("我好喜欢你", "affection", {"害羞", "心动", "开心"}),
        ("I love you", "affection", {"害羞", "心动", "开心"}),
        ("讨厌,烦死了", "negative", {"委屈", "担心", "难过"}),
        ("I hate this", "negative", {"委屈", "担心", "难过"}),
        ("我不喜欢这样", "negative", {"委屈", "担心", "难过"}),
        ("你在做什么?", "question", {"好奇", "思考", "认真"}),
        ("why is the sky blue", "question", {"好奇", "思考", "认真"}),
        ("拜拜", "farewell", {"不舍", "温柔"}),
        ("我去了公园", "chat", {"好奇", "开心", "认真", "调皮"}),
    ],
)
def test_reacts_to_obvious_content(text: str, intent: str, emotions: set[str]) -> None:
    assert detect_intent(text) == intent
    first = parse_reply(ask(ScriptedChatModel(), text))[0]
    assert first.emotion in emotions


@pytest.mark.parametrize(
    "text", ["我今天去了公园,看到很多猫", "I went to the beach today, it was fun"]
)
def test_echoes_a_short_piece_of_the_message(text: str) -> None:
    chinese = not text.isascii()
    piece = echo_of(text, chinese)
    assert piece and piece in text
    assert len(piece) <= 40
    assert piece in ask(ScriptedChatModel(), text)


def test_english_messages_get_english_replies() -> None:
    content = "".join(s.content for s in parse_reply(ask(ScriptedChatModel(), "hello there")))
    assert re.search(r"[A-Za-z]{3}", content)
    assert not re.search(r"[\u4e00-\u9fff]", content)


def test_character_name_is_used() -> None:
    named = ScriptedChatModel(character_name="白小喵")
    from_prompt = ScriptedChatModel()
    assert any("白小喵" in ask(named, t) for t in VARIED)
    assert any("钦灵" in ask(from_prompt, t) for t in VARIED)


def test_format_characters_in_the_input_cannot_break_the_format() -> None:
    model = ScriptedChatModel(character_name="(坏)<名字>")
    for text in ["【生气】你好<tts>(动作)", "((((", "<<<>>>", "】】】【"]:
        assert REPLY.fullmatch(ask(model, text))


def test_usage_is_reported() -> None:
    messages = [SYSTEM, {"role": "user", "content": "你好呀钦灵"}]
    result = ScriptedChatModel().complete(messages)
    chars = sum(len(m["content"]) for m in messages)
    assert result.prompt_tokens == (chars + 1) // 2
    assert result.completion_tokens == (len(result.text) + 1) // 2
    assert result.finish_reason == "stop"
    assert result.latency_ms >= 0


def test_max_tokens_drops_trailing_segments() -> None:
    model = ScriptedChatModel()
    text = next(t for t in (f"话题{i}" for i in range(100)) if len(parse_reply(ask(model, t))) == 3)
    result = model.complete([SYSTEM, {"role": "user", "content": text}], max_tokens=1)
    assert len(parse_reply(result.text)) == 1
    assert result.finish_reason == "length"
    full = ask(model, text)
    assert full.startswith(result.text)


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=300), seed=st.integers(min_value=-(2**40), max_value=2**40))
def test_any_message_gives_a_deterministic_well_formed_reply(text: str, seed: int) -> None:
    first = ScriptedChatModel(seed=seed).complete([{"role": "user", "content": text}])
    again = ScriptedChatModel(seed=seed).complete([{"role": "user", "content": text}])
    assert first.text == again.text
    assert REPLY.fullmatch(first.text), first.text
    assert first.completion_tokens and first.completion_tokens >= 1


# -- json mode: the LLM review ---------------------------------------------------------------


def review_request(**fields: Any) -> list[dict[str, str]]:
    return build_messages(ReviewInput(**fields))


REVIEW_KEYS = {
    "should_write_memory",
    "memory_items",
    "relationship_delta",
    "plot_update",
    "world_book_update",
    "scores",
}
SCORE_KEYS = {
    "character_fidelity",
    "immersion",
    "relationship_progress",
    "story_progress",
    "memory_value",
    "world_consistency",
    "user_engagement",
    "risk",
}


def test_json_mode_returns_a_plausible_review() -> None:
    messages = review_request(user_message="谢谢你,我好喜欢你", ai_reply="我也是")
    result = ScriptedChatModel().complete(messages, json_mode=True)
    data = json.loads(result.text)
    assert set(data) >= REVIEW_KEYS
    assert set(data["scores"]) == SCORE_KEYS
    assert all(0 <= v <= 1 for v in data["scores"].values())
    assert data["relationship_delta"]["affection"] == 1
    assert data["relationship_delta"]["trust"] == 1
    assert data["relationship_delta"]["familiarity"] == 1
    output = parse_review(result.text)
    assert output.source == "llm"
    assert output.relationship_delta is not None


def test_json_mode_follows_the_turn() -> None:
    model = ScriptedChatModel()
    sad = json.loads(
        model.complete(review_request(user_message="讨厌,你好烦"), json_mode=True).text
    )
    assert sad["relationship_delta"]["affection"] == -1
    assert sad["scores"]["risk"] >= 0.3
    turning = json.loads(
        model.complete(
            review_request(
                user_message="我决定留下来",
                ai_reply="真的吗",
                selected_choice={"text": "留下来", "level": "turning_point"},
            ),
            json_mode=True,
        ).text
    )
    assert turning["should_write_memory"] is True
    assert turning["memory_items"][0]["mem_type"] == "event"
    assert turning["plot_update"]["level"] == "turning_point"
    assert turning["world_book_update"]["should_update"] is True
    assert turning["scores"]["story_progress"] == 0.9


def test_json_mode_on_plain_chat_is_still_a_review_object() -> None:
    text = ScriptedChatModel().complete([{"role": "user", "content": "hi"}], json_mode=True).text
    assert parse_review(text).scores is not None


@settings(max_examples=40, deadline=None)
@given(user=st.text(max_size=250), reply=st.text(max_size=100))
def test_json_mode_always_validates(user: str, reply: str) -> None:
    text = (
        ScriptedChatModel()
        .complete(review_request(user_message=user, ai_reply=reply), json_mode=True)
        .text
    )
    parse_review(text)


def test_review_pipeline_llm_mode_runs_on_the_scripted_model() -> None:
    pipeline = ReviewPipeline(mode="llm", llm=ScriptedChatModel())
    out = pipeline.run(ReviewInput(user_message="谢谢你,我好喜欢你", ai_reply="我也是"))
    assert out.source == "llm"
    assert out.fallback_reason is None


# -- injected failures -----------------------------------------------------------------------


def test_fail_times_raises_first_then_answers() -> None:
    model = ScriptedChatModel(fail_times=2)
    messages = [{"role": "user", "content": "你好"}]
    for _ in range(2):
        with pytest.raises(LLMServerError) as info:
            model.complete(messages)
        assert info.value.retryable
    assert model.failures_left == 0
    assert model.complete(messages).text == ScriptedChatModel().complete(messages).text
    assert model.calls == 3


@pytest.mark.parametrize("failure", [LLMTimeoutError, LLMRateLimitError, LLMError])
def test_failure_type_is_configurable(failure: type[LLMError]) -> None:
    model = ScriptedChatModel(fail_times=1, failure=failure)
    with pytest.raises(failure):
        model.complete([{"role": "user", "content": "x"}])
    model.complete([{"role": "user", "content": "x"}])


def test_failure_count_is_per_instance_and_thread_safe() -> None:
    model = ScriptedChatModel(fail_times=25)
    other = ScriptedChatModel(fail_times=25)
    failures: list[int] = []
    successes: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(10):
            try:
                model.complete([{"role": "user", "content": "hi"}])
            except LLMServerError:
                with lock:
                    failures.append(1)
            else:
                with lock:
                    successes.append(1)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(failures) == 25
    assert len(successes) == 55
    assert model.calls == 80
    assert other.failures_left == 25


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"seed": "1"}, "seed"),
        ({"seed": True}, "seed"),
        ({"character_name": 5}, "character_name"),
        ({"fail_times": -1}, "fail_times"),
        ({"failure": ValueError}, "failure"),
    ],
)
def test_bad_construction_names_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        ScriptedChatModel(**kwargs)
    assert info.value.field == field


def test_bad_messages_name_the_field() -> None:
    model = ScriptedChatModel(fail_times=1)
    with pytest.raises(InputError) as info:
        model.complete([{"role": "user", "content": 3}])
    assert info.value.field == "messages[0].content"
    with pytest.raises(InputError):
        model.complete([{"role": "user", "content": "x"}], max_tokens=0)
    assert model.failures_left == 1  # bad input does not use up an injected failure
