"""The seed's two worked examples (seed 002), literally: they are the builder's acceptance tests.

Example 1's 【开兴】 is corrected to 【开心】 as SPEC says.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nekoflow.memory import build_memory

EXAMPLE_1_LINES = [
    {"line_id": 1, "attribute": "system", "content": "你叫钦灵,进行角色扮演"},
    {"line_id": 2, "attribute": "user", "content": "你好呀钦灵", "display_name": "莱姆"},
    {
        "line_id": 3,
        "attribute": "assistant",
        "original_emotion": "开心",
        "content": "你好呀莱姆,怎么今天来找我玩啦",
        "tts_content": "こんにちは、ライム、今日はどうして遊びに来たの",
        "action_content": "轻轻地摇了摇尾巴",
        "display_name": "钦灵",
    },
    {
        "line_id": 4,
        "attribute": "assistant",
        "original_emotion": "好奇",
        "content": "怎么样,今天的作业写完了吗?",
        "tts_content": "どうだ、今日の宿題は終わった?",
        "action_content": None,
        "display_name": "钦灵",
    },
    {
        "line_id": 5,
        "attribute": "assistant",
        "original_emotion": "担心",
        "content": "新的老师可严格了听说...",
        "tts_content": "新しい先生は聞いた通り、厳しいです...",
        "action_content": None,
        "display_name": "钦灵",
    },
    {"line_id": 6, "attribute": "user", "content": "没事啦,昨天已经搞定了", "display_name": "莱姆"},
    {
        "line_id": 7,
        "attribute": "assistant",
        "original_emotion": "无奈",
        "content": "呜呜,我还没写完呢...",
        "tts_content": "うう、まだ書き終わってないの...",
        "action_content": "轻轻地叹了口气",
        "display_name": "钦灵",
    },
    {
        "line_id": 8,
        "attribute": "assistant",
        "original_emotion": "调皮",
        "content": "那个,你的作业给我看看怎么样呀?",
        "tts_content": "あの、あなたの宿題を見てどうですか?",
        "action_content": None,
        "display_name": "钦灵",
    },
]

EXAMPLE_1_MEMORY = [
    {"role": "system", "content": "你叫钦灵,进行角色扮演"},
    {"role": "user", "content": "你好呀钦灵"},
    {
        "role": "assistant",
        "content": "【开心】你好呀莱姆,怎么今天来找我玩啦<こんにちは、ライム、今日はどうして遊びに来たの>(轻轻地摇了摇尾巴)【好奇】怎么样,今天的作业写完了吗?<どうだ、今日の宿題は終わった?>【担心】新的老师可严格了听说...<新しい先生は聞いた通り、厳しいです...>",  # noqa: E501
    },
    {"role": "user", "content": "没事啦,昨天已经搞定了"},
    {
        "role": "assistant",
        "content": "【无奈】呜呜,我还没写完呢...<うう、まだ書き終わってないの...>(轻轻地叹了口气)【调皮】那个,你的作业给我看看怎么样呀?<あの、あなたの宿題を見てどうですか?>",  # noqa: E501
    },
]

EXAMPLE_2_LINES = [
    {"line_id": 1, "attribute": "system", "content": "你叫钦灵,进行角色扮演", "role_id": 1},
    {
        "line_id": 2,
        "attribute": "system",
        "content": "你叫白小喵,进行角色扮演",
        "script_role_id": 1,
    },
    {
        "line_id": 3,
        "attribute": "assistant",
        "content": "圣诞节到了,莱姆来到了钦灵的家里",
        "display_name": "旁白",
    },
    {
        "line_id": 4,
        "attribute": "assistant",
        "original_emotion": "惊讶",
        "content": "哇,莱姆,你怎么来了?",
        "tts_content": "ワア、ライム、どうして来たの?",
        "action_content": None,
        "display_name": "钦灵",
        "role_id": 1,
    },
    {
        "line_id": 5,
        "attribute": "assistant",
        "original_emotion": "尴尬",
        "content": "我衣服还没换好呢,不要看啦!",
        "tts_content": "まだ服を着替えてないから、見ないでね!",
        "action_content": None,
        "display_name": "钦灵",
        "role_id": 1,
    },
    {
        "line_id": 6,
        "attribute": "assistant",
        "content": "只见钦灵连忙躲到了一只白色猫娘的背后,瑟瑟发抖着",
        "display_name": "旁白",
    },
    {
        "line_id": 7,
        "attribute": "user",
        "content": "啊啊,你怎么只穿内衣啊!",
        "display_name": "莱姆",
    },
    {
        "line_id": 8,
        "attribute": "user",
        "content": "赶紧穿上啦,我回避一下!",
        "display_name": "莱姆",
    },
    {
        "line_id": 9,
        "attribute": "assistant",
        "original_emotion": "难为情",
        "content": "谁知道你提前一个小时就来了!",
        "tts_content": "なんだか早く来たなって、知らなかったよ!",
        "action_content": None,
        "display_name": "钦灵",
        "role_id": 1,
    },
    {
        "line_id": 10,
        "attribute": "assistant",
        "original_emotion": "开心",
        "content": "你好呀莱姆,我在帮钦灵挑衣服呢~",
        "tts_content": "こんにちは、ライム、きんりょうの服を選んでるんです~",
        "action_content": None,
        "display_name": "白小喵",
        "script_role_id": 1,
    },
    {
        "line_id": 11,
        "attribute": "user",
        "content": "你是帮她挑衣服还是脱衣服啊...",
        "display_name": "莱姆",
    },
    {
        "line_id": 12,
        "attribute": "assistant",
        "original_emotion": "开心",
        "content": "不是啦,谁让你来这么巧刚准备换呢。",
        "tts_content": "そういうわけじゃないですよ、きんりょうが服を変えるのを待ってたんです",
        "action_content": None,
        "display_name": "白小喵",
        "script_role_id": 1,
    },
    {"line_id": 13, "attribute": "user", "content": "真是的...", "display_name": "莱姆"},
    {"line_id": 14, "attribute": "user", "content": "钦灵酱,换好了吗?", "display_name": "莱姆"},
    {
        "line_id": 15,
        "attribute": "assistant",
        "original_emotion": "难为情",
        "content": "好啦..",
        "tts_content": "はい、はい..",
        "action_content": None,
        "display_name": "钦灵",
        "role_id": 1,
    },
]

EXAMPLE_2_MEMORY = [
    {"role": "system", "content": "你叫钦灵,进行角色扮演"},
    {"role": "user", "content": "{旁白:圣诞节到了,莱姆来到了钦灵的家里}"},
    {
        "role": "assistant",
        "content": "【惊讶】哇,莱姆,你怎么来了?<ワア、ライム、どうして来たの?>【尴尬】我衣服还没换好呢,不要看啦!<まだ服を着替えてないから、見ないでね!>",  # noqa: E501
    },
    {
        "role": "user",
        "content": "{旁白:只见钦灵连忙躲到了一只白色猫娘的背后,瑟瑟发抖着}\n啊啊,你怎么只穿内衣啊!赶紧穿上啦,我回避一下!",  # noqa: E501
    },
    {
        "role": "assistant",
        "content": "【难为情】谁知道你提前一个小时就来了!<なんだか早く来たなって、知らなかったよ!>",
    },
    {
        "role": "user",
        "content": "{白小喵:你好呀莱姆,我在帮钦灵挑衣服呢~\n莱姆:你是帮她挑衣服还是脱衣服啊...\n白小喵:不是啦,谁让你来这么巧刚准备换呢。}\n真是的...钦灵酱,换好了吗?",  # noqa: E501
    },
    {"role": "assistant", "content": "【难为情】好啦..<はい、はい..>"},
]


def _as_objects(lines: list[dict]) -> list[SimpleNamespace]:
    """The same lines as attribute objects (like ``Line`` rows), every seed field present."""
    fields = [
        "attribute",
        "content",
        "original_emotion",
        "predicted_emotion",
        "tts_content",
        "action_content",
        "audio_file",
        "role_id",
        "script_role_id",
        "display_name",
    ]
    return [SimpleNamespace(**{f: line.get(f) for f in fields}) for line in lines]


@pytest.mark.parametrize("as_objects", [False, True], ids=["dicts", "objects"])
def test_example_1_one_to_one(as_objects: bool) -> None:
    lines = _as_objects(EXAMPLE_1_LINES) if as_objects else EXAMPLE_1_LINES
    assert build_memory(lines) == EXAMPLE_1_MEMORY


def test_example_1_with_the_characters_display_name() -> None:
    assert build_memory(EXAMPLE_1_LINES, display_name="钦灵") == EXAMPLE_1_MEMORY


@pytest.mark.parametrize("as_objects", [False, True], ids=["dicts", "objects"])
def test_example_2_multi_character_for_role_id_1(as_objects: bool) -> None:
    lines = _as_objects(EXAMPLE_2_LINES) if as_objects else EXAMPLE_2_LINES
    assert build_memory(lines, role_id=1) == EXAMPLE_2_MEMORY


def test_example_2_role_id_given_as_text() -> None:
    assert build_memory(EXAMPLE_2_LINES, role_id="1") == EXAMPLE_2_MEMORY
