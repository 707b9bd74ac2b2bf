"""Data that the seeds themselves show, shared by the tests that check against them."""

from __future__ import annotations

import copy
from typing import Any

_WHITE_TOWER_OATH: dict[str, Any] = {
    "id": "white_tower_oath",
    "name": "白塔旧誓",
    "keywords": ["白塔", "旧日誓约"],
    "content": "白塔是上一轮命运循环中...",
    "enabled": True,
    "priority": 80,
    "case_sensitive": False,
    "match_mode": "any",
    "trigger_sources": ["user", "assistant_recent", "scene_state"],
    "always_on": False,
    "state_triggers": {"location": ["白塔", "观星塔"]},
    "cooldown_turns": 2,
    "entry_type": "event",
    "weight": 0,
    "tags": ["风堇", "翁法罗斯"],
}


def white_tower_oath(**overrides: Any) -> dict[str, Any]:
    """The 白塔旧誓 entry of seed world-book.md's world_books.json example (a fresh copy)."""
    return {**copy.deepcopy(_WHITE_TOWER_OATH), **overrides}


def seed_book(book_id: str = "omphalos", **overrides: Any) -> dict[str, Any]:
    """The seed's 翁法罗斯 book holding the 白塔旧誓 entry, as world_books.json stores it."""
    return {
        "id": book_id,
        "name": "翁法罗斯",
        "description": "崩坏:星穹铁道世界观设定",
        "character_ids": ["风堇"],
        "entries": {"white_tower_oath": white_tower_oath()},
        "enabled": True,
        **overrides,
    }


# --- seed memory-builder.md: its two worked examples (【开兴】 corrected to 【开心】) ---------

None_ = None  # the seed writes Python's None inside its JSON-looking examples

SEED_EXAMPLE_1: list[dict[str, Any]] = [
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
        "action_content": None_,
        "display_name": "钦灵",
    },
    {
        "line_id": 5,
        "attribute": "assistant",
        "original_emotion": "担心",
        "content": "新的老师可严格了听说...",
        "tts_content": "新しい先生は聞いた通り、厳しいです...",
        "action_content": None_,
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
        "action_content": None_,
        "display_name": "钦灵",
    },
]

SEED_MEMORY_1 = [
    {"role": "system", "content": "你叫钦灵,进行角色扮演"},
    {"role": "user", "content": "你好呀钦灵"},
    {
        "role": "assistant",
        "content": "【开心】你好呀莱姆,怎么今天来找我玩啦"
        "<こんにちは、ライム、今日はどうして遊びに来たの>(轻轻地摇了摇尾巴)【好奇】怎么样,今天的作业写完了吗?<どうだ、今日の宿題は終わった?>"
        "【担心】新的老师可严格了听说...<新しい先生は聞いた通り、厳しいです...>",
    },
    {"role": "user", "content": "没事啦,昨天已经搞定了"},
    {
        "role": "assistant",
        "content": "【无奈】呜呜,我还没写完呢...<うう、まだ書き終わってないの...>(轻轻地叹了口气)"
        "【调皮】那个,你的作业给我看看怎么样呀?<あの、あなたの宿題を見てどうですか?>",
    },
]

SEED_EXAMPLE_2: list[dict[str, Any]] = [
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
        "action_content": None_,
        "display_name": "钦灵",
        "role_id": 1,
    },
    {
        "line_id": 5,
        "attribute": "assistant",
        "original_emotion": "尴尬",
        "content": "我衣服还没换好呢,不要看啦!",
        "tts_content": "まだ服を着替えてないから、見ないでね!",
        "action_content": None_,
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
        "action_content": None_,
        "display_name": "钦灵",
        "role_id": 1,
    },
    {
        "line_id": 10,
        "attribute": "assistant",
        "original_emotion": "开心",
        "content": "你好呀莱姆,我在帮钦灵挑衣服呢~",
        "tts_content": "こんにちは、ライム、きんりょうの服を選んでるんです~",
        "action_content": None_,
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
        "action_content": None_,
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
        "action_content": None_,
        "display_name": "钦灵",
        "role_id": 1,
    },
]

SEED_MEMORY_2 = [
    {"role": "system", "content": "你叫钦灵,进行角色扮演"},
    {"role": "user", "content": "{旁白:圣诞节到了,莱姆来到了钦灵的家里}"},
    {
        "role": "assistant",
        "content": "【惊讶】哇,莱姆,你怎么来了?<ワア、ライム、どうして来たの?>"
        "【尴尬】我衣服还没换好呢,不要看啦!<まだ服を着替えてないから、見ないでね!>",
    },
    {
        "role": "user",
        "content": "{旁白:只见钦灵连忙躲到了一只白色猫娘的背后,瑟瑟发抖着}\n"
        "啊啊,你怎么只穿内衣啊!赶紧穿上啦,我回避一下!",
    },
    {
        "role": "assistant",
        "content": "【难为情】谁知道你提前一个小时就来了!<なんだか早く来たなって、知らなかったよ!>",
    },
    {
        "role": "user",
        "content": "{白小喵:你好呀莱姆,我在帮钦灵挑衣服呢~\n莱姆:你是帮她挑衣服还是脱衣服啊...\n"
        "白小喵:不是啦,谁让你来这么巧刚准备换呢。}\n真是的...钦灵酱,换好了吗?",
    },
    {"role": "assistant", "content": "【难为情】好啦..<はい、はい..>"},
]


# --- seed channel-runtime.md: its config.ini example, verbatim ------------------------------

SEED_CONFIG = """\
[character_runtime]
# 全局默认是否启用角色运行时
default_enabled = true
# 默认角色卡 ID（留空则使用当前激活的角色）
default_character_id =

[character_runtime_qq]
# QQ 频道是否启用角色运行时
enabled = true
# 触发策略：mention_or_private 表示私聊总是触发，群聊被 @ 时触发
trigger = mention_or_private
# 记忆作用域：group_user = 群内每个用户独立关系状态
memory_scope = group_user
# 是否启用旧版 personality.json prompt（过渡期使用）
legacy_prompt_enabled = false

[character_runtime_qqbot]
# QQ 官方机器人频道是否启用角色运行时
enabled = true
trigger = mention_or_private
memory_scope = group

[character_runtime_feishu]
enabled = true
trigger = always
memory_scope = group

[character_runtime_telegram]
enabled = true
trigger = private_or_reply
memory_scope = group
"""


# --- seed world-book.md: its usage example (store.add_entry calls) ------------------------------

_USAGE_WHITE_TOWER: dict[str, Any] = {
    "name": "白塔旧誓",
    "keywords": ["白塔", "旧日誓约", "观星塔"],
    "content": "白塔是上一轮命运循环中风堇与用户分别的地方...",
    "match_mode": "any",
    "priority": 80,
    "entry_type": "event",
    "trigger_sources": ["user", "assistant_recent", "history", "scene_state"],
    "state_triggers": {"location": ["白塔", "观星塔"]},
    "cooldown_turns": 2,
}
_USAGE_RULE: dict[str, Any] = {
    "name": "世界基础规则",
    "keywords": [],
    "content": "这是一个命运循环的世界,每次循环会重置大部分记忆...",
    "always_on": True,
    "entry_type": "rule",
    "priority": 90,
}


def usage_white_tower(**overrides: Any) -> dict[str, Any]:
    """The 白塔旧誓 entry the seed's usage example adds (a fresh copy)."""
    return {**copy.deepcopy(_USAGE_WHITE_TOWER), **overrides}


def usage_rule(**overrides: Any) -> dict[str, Any]:
    """The always-on 世界基础规则 entry the seed's usage example adds (a fresh copy)."""
    return {**copy.deepcopy(_USAGE_RULE), **overrides}


# --- seed review-models.md: its ReviewInput example ---------------------------------------------

SEED_REVIEW_INPUT: dict[str, Any] = {
    "conversation_id": "conv_abc",
    "character_id": "char_xyz",
    "user_id": "user_123",
    "user_message": "你好,今天天气真好",
    "assistant_message": "是的,天气很好呢!",
    "selected_choice": {"level": "normal", "text": "继续聊天"},
    "relationship_state": {"affection": 75, "trust": 60},
    "character_state": {"mood": "happy", "energy": 0.8},
    "real_time_context": {"continuity_level": "continuous", "elapsed_label": "5分钟"},
}
