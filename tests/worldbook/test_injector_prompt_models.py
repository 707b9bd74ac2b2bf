"""Injector format and budgets, PromptStack ordering, and model validation."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from nekoflow.errors import InputError
from nekoflow.prompt import PromptStack
from nekoflow.worldbook import (
    WorldBook,
    WorldBookEntry,
    WorldBookMatchResult,
    WorldBookRecallConfig,
    WorldBookRecallContext,
    inject_world_book,
)
from nekoflow.worldbook.injector import HEADER, format_world_book
from tests.seed_data import white_tower_oath

# ---------------------------------------------------------------- injector


def test_injector_format_and_registration() -> None:
    stack = PromptStack()
    entries = [
        WorldBookEntry(name="白塔旧誓", content="  白塔是分别的地方。\n"),
        WorldBookEntry(name="空", content="   "),
        WorldBookEntry(name="", content="无名内容"),
    ]
    inject_world_book(stack, entries)
    item = stack.get("world_book")
    assert item is not None
    assert (item.priority, item.scope) == (65, "turn")
    assert item.content == (
        "以下是在当前对话中触发的世界观设定:\n\n【白塔旧誓】\n白塔是分别的地方。\n\n无名内容"
    )
    assert HEADER == "以下是在当前对话中触发的世界观设定:"


def test_injector_cuts_long_entries_and_skips_what_does_not_fit() -> None:
    long = WorldBookEntry(name="长", content="长" * 2500)
    mid = WorldBookEntry(name="中", content="中" * 1500)
    small = WorldBookEntry(name="小", content="小" * 10)
    text = format_world_book([long, mid, small])
    sections = text.split("\n\n")[1:]
    assert sections[0] == "【长】\n" + "长" * 2000 + "..."
    assert sections[1] == "【小】\n" + "小" * 10  # 中 would pass 3000 and is skipped
    assert len(sections) == 2
    assert format_world_book([small], max_total_chars=5) == ""


def test_injector_accepts_match_results_and_ignores_nothing_to_say() -> None:
    stack = PromptStack()
    inject_world_book(stack, [])
    inject_world_book(stack, [WorldBookEntry(content=" ")])
    assert "world_book" not in stack
    result = WorldBookMatchResult(entry=WorldBookEntry(name="n", content="c"), score=1)
    inject_world_book(stack, [result])
    assert stack.get("world_book").content.endswith("【n】\nc")  # type: ignore[union-attr]
    with pytest.raises(InputError) as err:
        inject_world_book(stack, ["oops"])  # type: ignore[list-item]
    assert err.value.field == "entries[0]"


# ---------------------------------------------------------------- PromptStack


def test_prompt_stack_renders_by_priority() -> None:
    stack = PromptStack()
    stack.add("world_book", "W", priority=PromptStack.PRIORITY_WORLD_BOOK, scope="turn")
    stack.add("global.safety", "S", priority=10)
    stack.add("character.memories", "M", priority=60)
    stack.add("tail", "T")
    stack.add("blank", "  \n")
    assert "blank" not in stack
    assert stack.render("BASE") == (
        "BASE\n\n## global.safety\nS\n\n## character.memories\nM\n\n## world_book\nW\n\n## tail\nT"
    )
    assert stack.render().startswith("## global.safety\nS")


def test_prompt_stack_same_key_replaces_and_turn_scope_ends() -> None:
    stack = PromptStack()
    stack.add("a", "one", priority=50)
    stack.add("a", "two", priority=5, scope="turn")
    assert len(stack) == 1
    assert stack.render("B") == "B\n\n## a\ntwo"
    stack.add("keep", "k")
    stack.end_turn()
    assert [i.key for i in stack.items()] == ["keep"]
    assert stack.remove("keep") and not stack.remove("keep")


def test_prompt_stack_priorities_and_validation() -> None:
    assert [
        PromptStack.PRIORITY_SAFETY,
        PromptStack.PRIORITY_BEHAVIOR,
        PromptStack.PRIORITY_CHARACTER_PROFILE,
        PromptStack.PRIORITY_RUNTIME_STATE,
        PromptStack.PRIORITY_REAL_TIME_CONTINUITY,
        PromptStack.PRIORITY_RELATIONSHIP,
        PromptStack.PRIORITY_REACTION_PLAN,
        PromptStack.PRIORITY_MEMORIES,
        PromptStack.PRIORITY_WORLD_BOOK,
        PromptStack.PRIORITY_KNOWLEDGE_RAG,
        PromptStack.PRIORITY_TOOL_INSTRUCTIONS,
    ] == [10, 20, 30, 40, 41, 50, 55, 60, 65, 70, 80]
    stack = PromptStack()
    for kwargs, field in [
        ({"key": "", "content": "x"}, "key"),
        ({"key": "k", "content": 3}, "content"),
        ({"key": "k", "content": "x", "priority": "high"}, "priority"),
        ({"key": "k", "content": "x", "scope": "forever"}, "scope"),
    ]:
        with pytest.raises(InputError) as err:
            stack.add(**kwargs)  # type: ignore[arg-type]
        assert err.value.field == field


# ---------------------------------------------------------------- models


def test_entry_defaults_are_the_seeds() -> None:
    e = WorldBookEntry()
    assert e.model_dump() == {
        "id": "",
        "name": "",
        "keywords": [],
        "content": "",
        "enabled": True,
        "priority": 0,
        "case_sensitive": False,
        "match_mode": "any",
        "trigger_sources": ["user"],
        "always_on": False,
        "state_triggers": {},
        "cooldown_turns": 0,
        "max_injections_per_session": 0,
        "tags": [],
        "entry_type": "lore",
        "weight": 0,
        "created_at": "",
        "updated_at": "",
    }
    assert WorldBookEntry().trigger_sources is not e.trigger_sources
    assert WorldBook().model_dump() == {
        "id": "",
        "name": "",
        "description": "",
        "character_ids": [],
        "entries": [],
        "enabled": True,
        "created_at": "",
        "updated_at": "",
    }
    cfg = WorldBookRecallConfig()
    assert (cfg.recent_message_limit, cfg.max_history_chars, cfg.max_total_chars) == (6, 2000, 3000)
    assert (cfg.max_entries, cfg.max_always_chars, cfg.max_scene_chars) == (8, 800, 1000)
    assert (cfg.max_keyword_chars, cfg.max_assistant_triggered_entries) == (1200, 3)
    assert cfg.min_assistant_priority == 20
    ctx = WorldBookRecallContext()
    assert (ctx.latest_user_message, ctx.scope_id, ctx.scene) == ("", "", {})
    r = WorldBookMatchResult(entry=WorldBookEntry())
    assert (r.trigger_sources, r.matched_keywords, r.score) == ([], [], 0)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("trigger_sources", ["user", "telepathy"]),
        ("entry_type", 5),
        ("match_mode", "some"),
        ("cooldown_turns", -1),
        ("max_injections_per_session", -2),
        ("keywords", "白塔"),
        ("state_triggers", {"location": [1]}),
    ],
)
def test_bad_entry_values_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as err:
        WorldBookEntry(**{field: value})  # type: ignore[arg-type]
    assert field in str(err.value)
    entry = WorldBookEntry()
    with pytest.raises(ValidationError, match=field):
        setattr(entry, field, value)


def test_unknown_fields_are_rejected() -> None:
    with pytest.raises(ValidationError, match="keyword"):
        WorldBookEntry(keyword=["typo"])  # type: ignore[call-arg]


def test_seed_example_entry_validates() -> None:
    data = white_tower_oath()
    entry = WorldBookEntry(**data)
    assert entry.model_dump(include=set(data)) == data
