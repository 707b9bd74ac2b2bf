"""WorldBookStore against the real databases (SQLite, and PostgreSQL when configured)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from sqlalchemy.engine import Engine

from nekoflow.errors import InputError
from nekoflow.worldbook import WorldBookEntry, WorldBookRecallContext, match_entries_v2
from nekoflow.worldbook.errors import WorldBookDataError, WorldBookNotFoundError
from nekoflow.worldbook.formats import dump_world_books, parse_world_books
from nekoflow.worldbook.store import WorldBookStore
from tests.seed_data import usage_rule, usage_white_tower

WHITE_TOWER = usage_white_tower()
RULE = usage_rule()


def test_seed_usage_example(engine: Engine) -> None:
    store = WorldBookStore(engine)
    book = store.create(
        name="翁法罗斯", description="崩坏:星穹铁道世界观设定", character_ids=["风堇"]
    )
    tower = store.add_entry(book.id, WHITE_TOWER)
    store.add_entry(book.id, RULE)
    assert tower.id and tower.created_at and tower.updated_at
    books = store.list_all()
    assert [b.name for b in books] == ["翁法罗斯"]
    assert [e.name for e in books[0].entries] == ["白塔旧誓", "世界基础规则"]
    ctx = WorldBookRecallContext(
        latest_user_message="进去看看",
        recent_messages=[{"role": "assistant", "content": "你们抵达了白塔门前。"}],
        scene={"location": "白塔", "arc": "火种仪式前夕"},
    )
    results = match_entries_v2(ctx, books, character_id="风堇")
    assert [(r.entry.name, r.trigger_sources, r.score) for r in results] == [
        ("世界基础规则", ["always"], 190),
        ("白塔旧誓", ["assistant_recent", "history", "scene_state"], 175),
    ]


def test_book_crud(engine: Engine) -> None:
    store = WorldBookStore(engine)
    a = store.create("A", id="a")
    b = store.create("B", character_ids=["x"], enabled=False)
    assert store.get("a") == a
    assert store.get("nope") is None
    assert [x.id for x in store.list_all()] == ["a", b.id]
    with pytest.raises(InputError) as err:
        store.create("again", id="a")
    assert err.value.field == "id"

    updated = store.update("a", name="A2", character_ids=["风堇"])
    assert updated is not None and (updated.name, updated.character_ids) == ("A2", ["风堇"])
    assert updated.updated_at > a.updated_at and updated.created_at == a.created_at
    assert store.update("nope", name="x") is None
    with pytest.raises(InputError) as err:
        store.update("a", entries=[])
    assert err.value.field == "entries"
    with pytest.raises(ValidationError, match="enabled"):
        store.update("a", enabled="maybe")
    assert store.get("a").name == "A2"  # type: ignore[union-attr]

    assert store.delete(b.id) is True
    assert store.delete(b.id) is False
    assert [x.id for x in store.list_all()] == ["a"]


def test_entry_crud(engine: Engine) -> None:
    store = WorldBookStore(engine)
    book = store.create("A", id="a")
    e1 = store.add_entry("a", {"id": "e1", "name": "one", "keywords": ["k"]})
    store.add_entry("a", WorldBookEntry(id="e2", name="two"))
    assert [e.id for e in store.list_entries("a")] == ["e1", "e2"]  # type: ignore[union-attr]
    assert store.list_entries("nope") is None
    with pytest.raises(InputError) as err:
        store.add_entry("a", {"id": "e1"})
    assert err.value.field == "id"
    with pytest.raises(ValidationError, match="match_mode"):
        store.add_entry("a", {"match_mode": "most"})
    with pytest.raises(WorldBookNotFoundError):
        store.add_entry("nope", {"name": "x"})

    changed = store.update_entry("a", "e1", {"priority": 5}, weight=2, entry_type="npc")
    assert changed is not None
    assert (changed.priority, changed.weight, changed.entry_type) == (5, 2, "npc")
    assert changed.created_at == e1.created_at and changed.updated_at >= e1.updated_at
    assert store.update_entry("a", "missing", priority=1) is None
    with pytest.raises(ValidationError, match="match_mode"):
        store.update_entry("a", "e1", match_mode="most")
    with pytest.raises(InputError) as err:
        store.update_entry("a", "e1", id="other")
    assert err.value.field == "id"
    assert store.get("a").updated_at > book.updated_at  # type: ignore[union-attr]

    assert store.delete_entry("a", "e1") is True
    assert store.delete_entry("a", "e1") is False
    assert [e.id for e in store.list_entries("a")] == ["e2"]  # type: ignore[union-attr]
    store.delete("a")
    assert store.list_entries("a") is None


def test_batch_is_all_or_nothing_and_names_each_bad_entry(engine: Engine) -> None:
    store = WorldBookStore(engine)
    store.create("A", id="a")
    store.add_entry("a", {"id": "old"})
    with pytest.raises(WorldBookDataError) as err:
        store.batch_add_entries(
            "a",
            [
                {"name": "fine", "keywords": ["k"]},
                {"name": "坏模式", "match_mode": "most"},
                {"id": "old", "name": "dup"},
                {"name": "bad source", "trigger_sources": ["telepathy"]},
                "not an entry",
            ],
        )
    problems = err.value.problems
    assert len(problems) == 4
    assert "坏模式" in problems[0] and "match_mode" in problems[0]
    assert "'old'" in problems[1] and "already exists" in problems[1]
    assert "trigger_sources" in problems[2]
    assert "entry #4" in problems[3]
    assert [e.id for e in store.list_entries("a")] == ["old"]  # type: ignore[union-attr]
    added = store.batch_add_entries("a", [{"name": "x"}, {"name": "y"}])
    assert [e.name for e in store.list_entries("a")] == ["", "x", "y"]  # type: ignore[union-attr]
    assert len({e.id for e in added}) == 2


def test_every_write_changes_the_revision_so_the_index_is_rebuilt(engine: Engine) -> None:
    store = WorldBookStore(engine)
    book = store.create("big", id="big")
    store.batch_add_entries("big", [{"id": f"e{i}", "keywords": [f"<{i}>"]} for i in range(600)])
    ctx = WorldBookRecallContext(latest_user_message="<5>")
    assert [r.entry.id for r in match_entries_v2(ctx, store.list_all())] == ["e5"]
    store.update_entry("big", "e0", keywords=["<5>"])
    assert [r.entry.id for r in match_entries_v2(ctx, store.list_all())] == ["e0", "e5"]
    assert book.id == "big"


def test_import_round_trip_is_lossless(engine: Engine) -> None:
    doc = {
        "world_books": {
            "b1": {
                "id": "b1",
                "name": "翁法罗斯",
                "description": "d",
                "character_ids": ["风堇"],
                "entries": {
                    "white_tower_oath": {
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
                        "max_injections_per_session": 3,
                        "tags": ["风堇", "翁法罗斯"],
                        "entry_type": "event",
                        "weight": 0,
                        "created_at": "2024-01-01T00:00:00",
                        "updated_at": "2024-01-02T00:00:00",
                    },
                    "z": {**WorldBookEntry(id="z", name="z").model_dump()},
                },
                "enabled": False,
                "created_at": "2024-01-01T00:00:00",
                "updated_at": "2024-01-03T00:00:00",
            },
            "a0": {
                "id": "a0",
                "name": "",
                "description": "",
                "character_ids": [],
                "entries": {},
                "enabled": True,
                "created_at": "",
                "updated_at": "",
            },
        }
    }
    store = WorldBookStore(engine)
    store.import_books(parse_world_books(doc))
    assert dump_world_books(store.list_all()) == doc


def test_import_conflicts_replace_and_atomicity(engine: Engine) -> None:
    store = WorldBookStore(engine)
    store.create("keep", id="k")
    store.create("old", id="b1")
    store.add_entry("b1", {"id": "x"})
    books = parse_world_books(
        {"world_books": {"new": {"name": "new"}, "b1": {"name": "replacement", "entries": {}}}}
    )
    with pytest.raises(WorldBookDataError, match="already exists"):
        store.import_books(books)
    assert [b.id for b in store.list_all()] == ["k", "b1"]  # nothing written
    assert store.get("new") is None
    store.import_books(books, replace=True)
    assert [(b.id, b.name, len(b.entries)) for b in store.list_all()] == [
        ("k", "keep", 0),
        ("b1", "replacement", 0),
        ("new", "new", 0),
    ]


def test_import_rejects_duplicate_ids(engine: Engine) -> None:
    from nekoflow.worldbook import WorldBook

    store = WorldBookStore(engine)
    bad = WorldBook(id="b", entries=[WorldBookEntry(id="e"), WorldBookEntry(id="e")])
    with pytest.raises(WorldBookDataError, match="'e' appears more than once"):
        store.import_books([bad])
    assert store.list_all() == []
