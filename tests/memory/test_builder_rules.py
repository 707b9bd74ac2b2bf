"""One test per memory-builder rule of SPEC "Memory builder" (beyond the seed's examples)."""

from __future__ import annotations

from types import MappingProxyType, SimpleNamespace
from typing import Any

import pytest

from nekoflow.errors import InputError
from nekoflow.memory import build_memory
from nekoflow.storage.dialogue import Line


def sys_(content: str, **kw: Any) -> dict[str, Any]:
    return {"attribute": "system", "content": content, **kw}


def user(content: str, name: str | None = "莱姆", **kw: Any) -> dict[str, Any]:
    return {"attribute": "user", "content": content, "display_name": name, **kw}


def say(content: str, name: str | None = None, **kw: Any) -> dict[str, Any]:
    return {"attribute": "assistant", "content": content, "display_name": name, **kw}


def me(content: str, **kw: Any) -> dict[str, Any]:
    return say(content, "钦灵", role_id=1, **kw)


# --- merging and formatting ----------------------------------------------------------------


def test_consecutive_target_lines_merge_without_separator() -> None:
    lines = [
        user("hi"),
        me("a", original_emotion="开心", tts_content="A", action_content="笑"),
        me("b", original_emotion="好奇"),
        me("c"),
    ]
    assert build_memory(lines, role_id=1) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "【开心】a<A>(笑)【好奇】bc"},
    ]


def test_a_user_line_splits_the_targets_reply() -> None:
    lines = [me("a"), user("x"), me("b")]
    assert build_memory(lines, role_id=1) == [
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": "b"},
    ]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, "说"),
        ({"original_emotion": "开心"}, "【开心】说"),
        ({"tts_content": "say"}, "说<say>"),
        ({"action_content": "点头"}, "说(点头)"),
        ({"original_emotion": "", "tts_content": "", "action_content": ""}, "说"),
        ({"original_emotion": "  ", "tts_content": None, "action_content": " "}, "说"),
        ({"original_emotion": "惊", "action_content": "跳"}, "【惊】说(跳)"),
    ],
)
def test_missing_emotion_tts_action_omit_their_brackets(fields: dict, expected: str) -> None:
    assert build_memory([me("说", **fields)], role_id=1) == [
        {"role": "assistant", "content": expected}
    ]


def test_predicted_emotion_is_not_the_emotion_shown() -> None:
    out = build_memory([me("说", predicted_emotion="开心")], role_id=1)
    assert out == [{"role": "assistant", "content": "说"}]


# --- other speakers: brace context ---------------------------------------------------------


def test_other_speakers_become_one_brace_block_without_emotion_or_tts() -> None:
    lines = [
        say("夜深了", "旁白"),
        say("喵", "白小喵", script_role_id="7", original_emotion="开心", tts_content="nya"),
        say("看着你", "白小喵", script_role_id="7", action_content="歪头"),
        me("嗯"),
    ]
    assert build_memory(lines, role_id=1) == [
        {"role": "user", "content": "{旁白:夜深了\n白小喵:喵\n白小喵:看着你(歪头)}"},
        {"role": "assistant", "content": "嗯"},
    ]


def test_other_speaker_without_name_is_unknown() -> None:
    lines = [say("……", None, role_id=2), me("谁?")]
    assert build_memory(lines, role_id=1)[0] == {"role": "user", "content": "{未知:……}"}


def test_trailing_context_is_a_final_user_message() -> None:
    lines = [me("好"), say("门开了", "旁白")]
    assert build_memory(lines, role_id=1) == [
        {"role": "assistant", "content": "好"},
        {"role": "user", "content": "{旁白:门开了}"},
    ]


# --- user runs inside / outside the braces --------------------------------------------------


def test_plain_consecutive_user_lines_merge_with_no_separator() -> None:
    lines = [user("一"), user("二"), user("三"), me("好")]
    assert build_memory(lines, role_id=1) == [
        {"role": "user", "content": "一二三"},
        {"role": "assistant", "content": "好"},
    ]


def test_user_run_followed_by_another_speaker_goes_inside_the_braces() -> None:
    lines = [say("来了", "旁白"), user("一"), user("二", None), say("嗯", "白小喵"), me("好")]
    assert build_memory(lines, role_id=1) == [
        {"role": "user", "content": "{旁白:来了\n莱姆:一\n用户:二\n白小喵:嗯}"},
        {"role": "assistant", "content": "好"},
    ]


def test_user_run_before_the_target_stays_outside_after_the_braces() -> None:
    lines = [say("来了", "旁白"), user("一"), user("二"), me("好")]
    assert build_memory(lines, role_id=1) == [
        {"role": "user", "content": "{旁白:来了}\n一二"},
        {"role": "assistant", "content": "好"},
    ]


def test_user_run_right_after_the_target_then_other_speaker_opens_the_braces() -> None:
    lines = [me("好"), user("一"), say("嗯", "旁白"), user("二"), me("行")]
    assert build_memory(lines, role_id=1) == [
        {"role": "assistant", "content": "好"},
        {"role": "user", "content": "{莱姆:一\n旁白:嗯}\n二"},
        {"role": "assistant", "content": "行"},
    ]


def test_history_ending_with_user_lines_ends_with_them_outside_the_braces() -> None:
    lines = [me("好"), say("风吹过", "旁白"), user("冷"), user("吗?")]
    assert build_memory(lines, role_id=1) == [
        {"role": "assistant", "content": "好"},
        {"role": "user", "content": "{旁白:风吹过}\n冷吗?"},
    ]


def test_history_ending_with_plain_user_lines() -> None:
    lines = [me("好"), user("冷"), user("吗?")]
    assert build_memory(lines, role_id=1)[-1] == {"role": "user", "content": "冷吗?"}


# --- system lines ----------------------------------------------------------------------------


def test_system_lines_of_the_target_or_without_identity_are_kept_others_dropped() -> None:
    lines = [
        sys_("全局设定"),
        sys_("你是钦灵", role_id=1),
        sys_("你是白小喵", script_role_id="1"),
        sys_("你是别人", role_id=2),
        sys_("你是路人", display_name="路人"),
        user("hi"),
    ]
    assert build_memory(lines, role_id=1) == [
        {"role": "system", "content": "全局设定"},
        {"role": "system", "content": "你是钦灵"},
        {"role": "user", "content": "hi"},
    ]


def test_a_dropped_system_line_is_invisible() -> None:
    lines = [
        say("来了", "旁白"),
        user("一"),
        sys_("别人的设定", role_id=2),
        me("a"),
        sys_("别人的设定", role_id=2),
        me("b"),
    ]
    assert build_memory(lines, role_id=1) == [
        {"role": "user", "content": "{旁白:来了}\n一"},
        {"role": "assistant", "content": "ab"},
    ]


def test_a_kept_system_line_flushes_what_is_pending_first() -> None:
    lines = [me("a"), say("夜", "旁白"), user("一"), sys_("场景切换"), me("b")]
    assert build_memory(lines, role_id=1) == [
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "{旁白:夜}\n一"},
        {"role": "system", "content": "场景切换"},
        {"role": "assistant", "content": "b"},
    ]


# --- the three identifiers and their namespaces ----------------------------------------------


def _speakers() -> list[dict[str, Any]]:
    return [
        say("R", "甲", role_id=1),
        user("u"),
        say("S", "乙", script_role_id="1"),
        user("v"),
        say("N", "丙"),
    ]


def test_role_id_matches_only_role_id() -> None:
    assert build_memory(_speakers(), role_id=1) == [
        {"role": "assistant", "content": "R"},
        {"role": "user", "content": "{莱姆:u\n乙:S\n莱姆:v\n丙:N}"},
    ]


def test_script_role_id_matches_only_script_role_id() -> None:
    assert build_memory(_speakers(), script_role_id=1) == [
        {"role": "user", "content": "{甲:R}\nu"},
        {"role": "assistant", "content": "S"},
        {"role": "user", "content": "{莱姆:v\n丙:N}"},
    ]


def test_display_name_matches_display_name() -> None:
    assert build_memory(_speakers(), display_name="丙") == [
        {"role": "user", "content": "{甲:R\n莱姆:u\n乙:S}\nv"},
        {"role": "assistant", "content": "N"},
    ]


def test_any_given_identifier_makes_the_target() -> None:
    out = build_memory(_speakers(), role_id=1, display_name="丙")
    assert out == [
        {"role": "assistant", "content": "R"},
        {"role": "user", "content": "{莱姆:u\n乙:S}\nv"},
        {"role": "assistant", "content": "N"},
    ]


def test_role_id_1_is_not_script_role_id_1_for_system_lines_either() -> None:
    lines = [sys_("钦灵设定", role_id=1), sys_("白小喵设定", script_role_id=1)]
    assert build_memory(lines, script_role_id=1) == [{"role": "system", "content": "白小喵设定"}]
    assert build_memory(lines, role_id=1) == [{"role": "system", "content": "钦灵设定"}]


def test_no_identifier_means_every_assistant_line_is_the_target() -> None:
    assert build_memory(_speakers()) == [
        {"role": "assistant", "content": "R"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "S"},
        {"role": "user", "content": "v"},
        {"role": "assistant", "content": "N"},
    ]


def test_no_identifier_keeps_every_system_line() -> None:
    lines = [sys_("a", role_id=1), sys_("b", script_role_id="x"), sys_("c")]
    assert [m["content"] for m in build_memory(lines)] == ["a", "b", "c"]


# --- shapes of input and bad input -----------------------------------------------------------


def test_empty_history_and_generators() -> None:
    assert build_memory([]) == []
    assert build_memory(x for x in [user("a"), me("b")]) == [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
    ]


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ("just text", "lines[1]"),
        (None, "lines[1]"),
        (42, "lines[1]"),
        ({"content": "x"}, "lines[1].attribute"),
        ({"attribute": None, "content": "x"}, "lines[1].attribute"),
        ({"attribute": "narrator", "content": "x"}, "lines[1].attribute"),
        ({"attribute": "user"}, "lines[1].content"),
        ({"attribute": "user", "content": None}, "lines[1].content"),
        ({"attribute": "user", "content": 5}, "lines[1].content"),
        (object(), "lines[1].attribute"),
    ],
)
def test_bad_line_names_the_field_and_index(bad: Any, field: str) -> None:
    with pytest.raises(InputError) as err:
        build_memory([user("ok"), bad])
    assert err.value.field == field
    assert field in str(err.value)


@pytest.mark.parametrize("bad", ["text", 3, None, {"attribute": "user"}])
def test_lines_must_be_a_list(bad: Any) -> None:
    with pytest.raises(InputError) as err:
        build_memory(bad)
    assert err.value.field == "lines"


def test_lines_of_every_shape_give_the_same_memory() -> None:
    class PropertyLine:
        def __init__(self, data: dict[str, Any]) -> None:
            self._data = data

        def __getattr__(self, key: str) -> Any:
            if key.startswith("_"):
                raise AttributeError(key)
            return self._data.get(key)

    lines = [
        say("夜", "旁白"),
        user("一"),
        me("好", original_emotion="开心", tts_content="ok", action_content="笑"),
    ]
    expected = build_memory(lines, role_id=1)
    assert expected == [
        {"role": "user", "content": "{旁白:夜}\n一"},
        {"role": "assistant", "content": "【开心】好<ok>(笑)"},
    ]
    shapes = [
        [Line(save_id=1, **x) for x in lines],  # ORM rows
        [SimpleNamespace(**x) for x in lines],  # partial objects (missing optional fields)
        [PropertyLine(x) for x in lines],  # fields served by __getattr__
        [MappingProxyType(x) for x in lines],  # read-only mappings
    ]
    for shaped in shapes:
        assert build_memory(shaped, role_id=1) == expected
