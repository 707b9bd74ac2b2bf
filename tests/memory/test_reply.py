"""parse_reply / format_reply: examples, tolerance of malformed replies, and property tests."""

from __future__ import annotations

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nekoflow.memory import ReplySegment, build_memory, format_reply, parse_reply
from nekoflow.memory.reply import DELIMITERS


def seg(
    content: str = "", emotion: str | None = None, tts: str | None = None, action: str | None = None
) -> ReplySegment:
    return ReplySegment(emotion=emotion, content=content, tts=tts, action=action)


def test_parses_the_seed_reply_format() -> None:
    text = "【高兴】莱姆你来啦(开心的摇尾巴)【好奇】你今天想聊什么呀?"
    assert parse_reply(text) == [
        seg("莱姆你来啦", "高兴", action="开心的摇尾巴"),
        seg("你今天想聊什么呀?", "好奇"),
    ]


def test_all_four_parts() -> None:
    assert parse_reply("【开心】你好<こんにちは>(摇尾巴)") == [
        seg("你好", "开心", "こんにちは", "摇尾巴")
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("只有内容", [seg("只有内容")]),
        ("【开心】", [seg("", "开心")]),
        ("你好<hello>", [seg("你好", tts="hello")]),
        ("(点头)", [seg(action="点头")]),
        ("【】你好", [seg("你好")]),
        ("你好()", [seg("你好")]),
    ],
)
def test_missing_parts_are_tolerated(text: str, expected: list[ReplySegment]) -> None:
    assert parse_reply(text) == expected


def test_stray_whitespace_and_full_width_parentheses() -> None:
    text = "  【 开心 】 你好 呀 < hello >  （ 摇尾巴 ）\n\n【好奇】 嗯?  "
    assert parse_reply(text) == [
        seg("你好 呀", "开心", "hello", "摇尾巴"),
        seg("嗯?", "好奇"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("【开心 你好", [seg("【开心 你好")]),
        ("你好<hello", [seg("你好<hello")]),
        ("你好(点头", [seg("你好(点头")]),
        ("你好)】>", [seg("你好)】>")]),
        ("【开心】你好(点(头)", [seg("你好(点", "开心", action="头")]),
        ("(摇(尾)巴)", [seg(action="摇(尾)巴")]),
    ],
)
def test_unbalanced_brackets_are_kept_as_content(text: str, expected: list[ReplySegment]) -> None:
    assert parse_reply(text) == expected


def test_text_after_tts_or_action_starts_a_new_segment() -> None:
    assert parse_reply("a<t>b(c)d") == [seg("a", tts="t"), seg("b", action="c"), seg("d")]
    assert parse_reply("(x)<y>") == [seg(action="x"), seg(tts="y")]


def test_empty_and_non_string_input() -> None:
    assert parse_reply("") == []
    assert parse_reply("  \n ") == []
    assert parse_reply(None) == []  # type: ignore[arg-type]
    assert parse_reply(12) == [seg("12")]  # type: ignore[arg-type]


def test_format_reply_omits_brackets_of_missing_parts_and_accepts_mappings() -> None:
    assert format_reply([seg("a", "e", "t", "x"), {"content": "b"}, seg("c", action="y")]) == (
        "【e】a<t>(x)b" + "c(y)"
    )


def test_format_reply_rejects_a_bad_mapping_naming_the_field() -> None:
    with pytest.raises(pydantic.ValidationError, match="content"):
        format_reply([{"content": 3}])


# --- properties ------------------------------------------------------------------------------

_part = st.text(
    alphabet=st.characters(blacklist_characters="".join(DELIMITERS), blacklist_categories=["Cs"]),
    max_size=12,
).map(str.strip)
_opt = st.one_of(st.none(), _part)
_emotional_segment = st.builds(
    ReplySegment, emotion=_part.filter(bool), content=_part, tts=_opt, action=_opt
)
_any_segment = st.builds(ReplySegment, emotion=_opt, content=_part, tts=_opt, action=_opt)


@given(st.lists(_emotional_segment, max_size=6))
def test_format_then_parse_gives_back_the_segments(segments: list[ReplySegment]) -> None:
    assert parse_reply(format_reply(segments)) == segments


@given(st.lists(_any_segment, max_size=6))
def test_format_parse_format_keeps_the_text(segments: list[ReplySegment]) -> None:
    # Segments without an emotion may regroup (e.g. "a" + "b" reads back as "ab"); the text may not.
    text = format_reply(segments)
    assert format_reply(parse_reply(text)) == text


def _essence(text: str) -> str:
    return "".join(ch for ch in text if not ch.isspace() and ch not in DELIMITERS)


_reply_like = st.text(
    alphabet=st.one_of(st.sampled_from([*sorted(DELIMITERS), " ", "\n"]), st.characters()),
    max_size=60,
)


@given(_reply_like)
def test_parse_never_raises_and_loses_nothing(text: str) -> None:
    segments = parse_reply(text)
    recovered = "".join(
        (s.emotion or "") + s.content + (s.tts or "") + (s.action or "") for s in segments
    )
    assert _essence(recovered) == _essence(text)
    assert all(isinstance(s, ReplySegment) for s in segments)


@given(st.lists(_any_segment, min_size=1, max_size=5))
def test_the_builder_renders_stored_segments_exactly_as_format_reply(
    segments: list[ReplySegment],
) -> None:
    lines = [
        {
            "attribute": "assistant",
            "content": s.content,
            "original_emotion": s.emotion,
            "tts_content": s.tts,
            "action_content": s.action,
        }
        for s in segments
    ]
    text = format_reply(segments)
    expected = [{"role": "assistant", "content": text}] if text else []
    assert build_memory(lines) == expected


@pytest.mark.parametrize("bad", [None, 1, 1.5, "【开心】你好", b"x", object()])
def test_format_reply_of_a_non_list_is_an_input_error_naming_segments(bad: object) -> None:
    from nekoflow.errors import InputError

    with pytest.raises(InputError, match="segments") as ei:
        format_reply(bad)  # type: ignore[arg-type]
    assert ei.value.field == "segments"


def test_format_reply_of_a_single_segment() -> None:
    assert format_reply(ReplySegment(emotion="开心", content="你好")) == "【开心】你好"
    assert format_reply({"content": "你好", "action": "笑"}) == "你好(笑)"
