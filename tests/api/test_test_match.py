"""``POST /api/world-books/test-match``: the seed's simple and multi-source examples, exactly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from nekoflow.worldbook.store import WorldBookStore
from tests.seed_data import white_tower_oath

URL = "/api/world-books/test-match"

OATH: dict[str, Any] = white_tower_oath()
HELLO: dict[str, Any] = {
    "id": "hello_world",
    "name": "世界",
    "keywords": ["世界"],
    "content": "这是一个命运循环的世界。",
}


@pytest.fixture
def client(make_client: Callable[..., TestClient], auth: dict[str, str]) -> TestClient:
    """The test app, every request with the token (test-match needs it)."""
    c = make_client()
    c.headers.update(auth)
    return c


@pytest.fixture
def seeded(engine) -> WorldBookStore:
    """The seed's 翁法罗斯 book (bound to 风堇) and a global book."""
    store = WorldBookStore(engine)
    store.create("翁法罗斯", "崩坏:星穹铁道世界观设定", ["风堇"], id="omphalos", entries=[OATH])
    store.create("通用", id="global", entries=[HELLO])
    return store


def test_multi_source_mode_matches_the_seed_response_exactly(
    client: TestClient, seeded: WorldBookStore
) -> None:
    body = {
        "message": "进去看看",
        "character_id": "风堇",
        "recent_messages": [
            {"role": "assistant", "content": "你们抵达了白塔门前,风堇望着塔顶的火种纹章沉默。"}
        ],
        "scene": {"location": "白塔", "arc": "火种仪式前夕"},
    }
    r = client.post(URL, json=body)
    assert r.status_code == 200, r.text
    assert r.json() == {
        "success": True,
        "matches": [
            {
                "world_book_name": "翁法罗斯",
                "entry_name": "白塔旧誓",
                "entry_id": "white_tower_oath",
                "matched_keywords": ["白塔"],
                "trigger_sources": ["assistant_recent", "scene_state"],
                "score": 155,
                "content_preview": "白塔是上一轮命运循环中...",
            }
        ],
    }


def test_simple_mode(client: TestClient, seeded: WorldBookStore) -> None:
    r = client.post(URL, json={"message": "你好世界", "character_id": "角色名"})
    assert r.status_code == 200
    matches = r.json()["matches"]
    # 翁法罗斯 is bound to 风堇, so only the global book applies to 角色名
    assert [(m["world_book_name"], m["entry_id"]) for m in matches] == [("通用", "hello_world")]
    assert matches[0]["trigger_sources"] == ["user"] and matches[0]["score"] == 50
    assert matches[0]["matched_keywords"] == ["世界"]


def test_user_keyword_and_character_filter(client: TestClient, seeded: WorldBookStore) -> None:
    hits = client.post(URL, json={"message": "白塔的世界", "character_id": "风堇"}).json()
    assert [m["entry_id"] for m in hits["matches"]] == ["white_tower_oath", "hello_world"]
    assert hits["matches"][0]["score"] == 50 + 80
    other = client.post(URL, json={"message": "白塔", "character_id": "别人"}).json()
    assert other["matches"] == []
    anyone = client.post(URL, json={"message": "白塔"}).json()  # no character: no filter
    assert [m["entry_id"] for m in anyone["matches"]] == ["white_tower_oath"]


def test_config_override_and_empty_store(client: TestClient, seeded: WorldBookStore) -> None:
    r = client.post(URL, json={"message": "白塔的世界", "config": {"max_entries": 1}})
    assert [m["entry_id"] for m in r.json()["matches"]] == ["white_tower_oath"]
    seeded.delete("omphalos")
    seeded.delete("global")
    assert client.post(URL, json={"message": "白塔"}).json() == {"success": True, "matches": []}


def test_content_preview_is_cut(client: TestClient, engine) -> None:
    WorldBookStore(engine).create(
        "长", entries=[{"id": "long", "keywords": ["长"], "content": "长" * 500}]
    )
    match = client.post(URL, json={"message": "长"}).json()["matches"][0]
    assert match["content_preview"] == "长" * 200


def test_test_match_does_not_record_cooldowns(client: TestClient, seeded: WorldBookStore) -> None:
    for _ in range(3):  # cooldown_turns=2 would block the 2nd and 3rd call if recorded
        hits = client.post(URL, json={"message": "白塔", "character_id": "风堇"}).json()
        assert [m["entry_id"] for m in hits["matches"]] == ["white_tower_oath"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "message"),
        ({"message": 3}, "message"),
        ({"message": "x", "recent_messages": [{"content": "no role"}]}, "role"),
        ({"message": "x", "scene": ["not", "a", "dict"]}, "scene"),
        ({"message": "x", "config": {"max_entries": -1}}, "max_entries"),
        ({"message": "x", "mode": "fast"}, "mode"),
    ],
)
def test_bad_bodies_are_422(client: TestClient, body: dict[str, Any], field: str) -> None:
    r = client.post(URL, json=body)
    assert r.status_code == 422
    assert field in r.json()["error"]


def test_test_match_is_not_shadowed_by_book_routes(
    client: TestClient, auth: dict[str, str], seeded: WorldBookStore
) -> None:
    # a book may even be called "test-match": GET reaches it, POST still reaches test-match
    seeded.create("odd", id="test-match")
    assert client.get("/api/world-books/test-match").json()["id"] == "test-match"
    assert client.post(URL, json={"message": "白塔"}).json()["success"] is True


def test_whole_recall_context_fields_are_accepted(
    client: TestClient, seeded: WorldBookStore
) -> None:
    # a client may send every WorldBookRecallContext field; explicit texts replace derived ones
    body = {
        "message": "进去看看",
        "character_id": "风堇",
        "assistant_recent_text": "白塔门前",
        "history_text": "",
        "target_id": "user-1",
        "scope_id": "scope-1",
        "active_entry_ids": ["white_tower_oath"],
    }
    r = client.post(URL, json=body)
    assert r.status_code == 200, r.text
    (match,) = r.json()["matches"]
    assert (match["entry_id"], match["trigger_sources"], match["score"]) == (
        "white_tower_oath",
        ["assistant_recent"],
        30 + 80,
    )
    # scope_id does not make test-match consult or record cooldowns (cooldown_turns=2)
    again = client.post(URL, json=body).json()["matches"]
    assert [m["entry_id"] for m in again] == ["white_tower_oath"]


def test_a_scope_is_scanned_as_its_next_turn_would(client: TestClient, engine) -> None:
    """With ``scope_id`` the API scans the scope's history as a turn would — for a new scope the
    card's greeting its first turn writes (lide_ai_v3's greeting names 沈念) — like the CLI."""
    from nekoflow.characters import import_card_report
    from tests.corpus import corpus_file

    role = import_card_report(engine, corpus_file("lide_ai_v3.json").read_bytes()).role
    body = {"message": "最近怎么样？", "character_id": str(role.id), "config": {"max_entries": 50}}
    bare = client.post(URL, json=body)
    scoped = client.post(URL, json={**body, "scope_id": "web:conversation:new"})
    assert bare.status_code == 200 and scoped.status_code == 200, scoped.text
    names = {m["entry_name"] for m in scoped.json()["matches"]}
    dropped = {d["entry_name"] for d in scoped.json().get("dropped") or []}
    bare_names = {m["entry_name"] for m in bare.json()["matches"]}
    bare_dropped = {d["entry_name"] for d in bare.json().get("dropped") or []}
    assert "沈念_三面性" in (names | dropped) - (bare_names | bare_dropped)
    # a name that is no character (books may be bound to any name) scans no history
    unknown = client.post(URL, json={**body, "character_id": "nobody", "scope_id": "web:x"})
    assert unknown.status_code == 200 and unknown.json()["matches"] == []
