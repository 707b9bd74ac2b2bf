"""The seed's own ways of using the world-book API.

``WorldBookStore(base_dir)``, books in the ``world_books.json`` shape (entries keyed by id), and the
seed stack's priority names and ``role``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nekoflow.errors import InputError
from nekoflow.prompt import PromptStack
from nekoflow.worldbook import (
    WorldBook,
    WorldBookRecallContext,
    inject_world_book,
    match_entries_v2,
)
from nekoflow.worldbook.formats import dump_world_books, parse_world_books
from nekoflow.worldbook.store import BASE_DIR_DB, WorldBookStore
from tests.seed_data import seed_book, usage_rule, usage_white_tower

SEED_BOOK = seed_book()


def test_a_book_in_the_world_books_json_shape_validates() -> None:
    book = WorldBook.model_validate(SEED_BOOK)
    assert [e.id for e in book.entries] == ["white_tower_oath"]
    assert book.entries[0].state_triggers == {"location": ["白塔", "观星塔"]}
    # an entry without an id takes its key; order is kept
    keyed = WorldBook.model_validate(
        {"entries": {"b": {"name": "B"}, "a": {"name": "A", "id": ""}}}
    )
    assert [(e.id, e.name) for e in keyed.entries] == [("b", "B"), ("a", "A")]
    # and the raw seed dict works as a book for the matcher (the seed's test-match example)
    ctx = WorldBookRecallContext(
        latest_user_message="进去看看",
        recent_messages=[{"role": "assistant", "content": "你们抵达了白塔门前。"}],
        scene={"location": "白塔", "arc": "火种仪式前夕"},
    )
    (hit,) = match_entries_v2(ctx, [SEED_BOOK], character_id="风堇")  # type: ignore[list-item]
    assert (hit.trigger_sources, hit.matched_keywords, hit.score) == (
        ["assistant_recent", "scene_state"],
        ["白塔"],
        155,
    )
    # world_books.json round trip of the same book is lossless
    dumped = dump_world_books(parse_world_books({"world_books": {"omphalos": SEED_BOOK}}))
    entry = dumped["world_books"]["omphalos"]["entries"]["white_tower_oath"]
    assert {k: entry[k] for k in SEED_BOOK["entries"]["white_tower_oath"]} == (
        SEED_BOOK["entries"]["white_tower_oath"]
    )


def test_store_on_a_base_dir_runs_the_seed_usage_example(tmp_path: Path) -> None:
    store = WorldBookStore(str(tmp_path))
    book = store.create(
        name="翁法罗斯", description="崩坏:星穹铁道世界观设定", character_ids=["风堇"]
    )
    store.add_entry(book.id, usage_white_tower())
    store.add_entry(book.id, usage_rule())
    assert tmp_path.joinpath(*BASE_DIR_DB).is_file()
    context = WorldBookRecallContext(
        latest_user_message="进去看看",
        recent_messages=[{"role": "assistant", "content": "你们抵达了白塔门前。"}],
        scene={"location": "白塔", "arc": "火种仪式前夕"},
    )
    # a second store on the same directory sees the same books (Path works as well as str)
    results = match_entries_v2(context, WorldBookStore(tmp_path).list_all(), character_id="风堇")
    assert [(r.entry.name, r.score, r.trigger_sources) for r in results] == [
        ("世界基础规则", 100 + 90, ["always"]),
        ("白塔旧誓", 30 + 20 + 45 + 80, ["assistant_recent", "history", "scene_state"]),
    ]
    stack = PromptStack()
    inject_world_book(stack, [r.entry for r in results])
    assert stack.render("BASE") == (
        "BASE\n\n## world_book\n以下是在当前对话中触发的世界观设定:\n\n"
        "【世界基础规则】\n这是一个命运循环的世界,每次循环会重置大部分记忆...\n\n"
        "【白塔旧誓】\n白塔是上一轮命运循环中风堇与用户分别的地方..."
    )


def test_store_takes_a_database_url_and_rejects_junk(tmp_path: Path) -> None:
    store = WorldBookStore(f"sqlite:///{tmp_path / 'wb.db'}")
    store.create("书", id="b")
    assert [b.id for b in store.list_all()] == ["b"]
    with pytest.raises(InputError) as err:
        WorldBookStore(42)  # type: ignore[arg-type]
    assert err.value.field == "engine"


def test_seed_priority_names_and_role() -> None:
    assert PromptStack.PRIORITY_CHARACTER_STATE == PromptStack.PRIORITY_RUNTIME_STATE == 40
    assert PromptStack.PRIORITY_CHARACTER_RUNTIME_STATE == 40
    assert PromptStack.PRIORITY_CHARACTER_RELATIONSHIP == PromptStack.PRIORITY_RELATIONSHIP == 50
    assert PromptStack.PRIORITY_CHARACTER_REACTION_PLAN == 55
    assert PromptStack.PRIORITY_CHARACTER_MEMORIES == PromptStack.PRIORITY_MEMORIES == 60
    stack = PromptStack()
    stack.add("tool.instructions", "T", priority=80, role="developer")
    stack.add("global.safety", "S" * 250, priority=10)
    assert stack.get("tool.instructions").role == "developer"  # type: ignore[union-attr]
    assert stack.get("global.safety").role == "system"  # type: ignore[union-attr]
    assert stack.render() == "## global.safety\n" + "S" * 250 + "\n\n## tool.instructions\nT"
    assert stack.render_debug() == [
        {
            "key": "global.safety",
            "content": "S" * 200 + "...",
            "priority": 10,
            "role": "system",
            "scope": "session",
        },
        {
            "key": "tool.instructions",
            "content": "T",
            "priority": 80,
            "role": "developer",
            "scope": "session",
        },
    ]
    with pytest.raises(InputError) as err:
        stack.add("k", "x", role="user")  # type: ignore[arg-type]
    assert err.value.field == "role"


def test_injected_entries_are_the_ones_in_the_prompt() -> None:
    from nekoflow.worldbook import WorldBookEntry
    from nekoflow.worldbook.injector import format_world_book, injected_entries

    # contents (10 + 10 + 10) would fit 30 chars but the sections carry their name lines:
    # 【甲】\n + 10 = 14; 乙 would make 28 > 25 and is skipped; c (no name) makes 24
    a = WorldBookEntry(id="a", name="甲", content="a" * 10)
    b = WorldBookEntry(id="b", name="乙", content="b" * 10)
    blank = WorldBookEntry(id="blank", name="空", content="  ")
    c = WorldBookEntry(id="c", content="c" * 10)
    picked = injected_entries([a, blank, b, c], max_total_chars=25)
    assert [e.id for e in picked] == ["a", "c"]
    text = format_world_book([a, blank, b, c], max_total_chars=25)
    assert text.endswith("【甲】\n" + "a" * 10 + "\n\n" + "c" * 10)
