"""World-book endpoints of the seed's table against the real app, SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from nekoflow.worldbook.store import WorldBookStore
from tests.seed_data import usage_rule, usage_white_tower

ORACLE: dict[str, Any] = usage_white_tower(id="white_tower_oath")
RULE: dict[str, Any] = usage_rule()


def _book(client: TestClient, auth: dict[str, str], **fields: Any) -> dict[str, Any]:
    body = {"name": "翁法罗斯", "description": "崩坏:星穹铁道世界观设定", **fields}
    r = client.post("/api/world-books", json=body, headers=auth)
    assert r.status_code == 201, r.text
    return r.json()["world_book"]


def test_book_crud_round_trip(client: TestClient, auth: dict[str, str], engine) -> None:
    book = _book(client, auth, character_ids=["风堇"])
    assert book["id"] and book["name"] == "翁法罗斯" and book["character_ids"] == ["风堇"]
    assert book["entries"] == [] and book["entry_count"] == 0 and book["enabled"] is True

    listed = client.get("/api/world-books").json()
    assert [b["id"] for b in listed] == [book["id"]]

    got = client.get(f"/api/world-books/{book['id']}")
    assert got.status_code == 200 and got.json() == book

    r = client.put(
        f"/api/world-books/{book['id']}", json={"enabled": False, "name": "新名字"}, headers=auth
    )
    assert r.status_code == 200, r.text
    updated = r.json()["world_book"]
    assert updated["enabled"] is False and updated["name"] == "新名字"
    assert updated["description"] == book["description"]  # left out → unchanged
    assert updated["updated_at"] >= book["updated_at"]
    assert WorldBookStore(engine).get(book["id"]).name == "新名字"

    r = client.delete(f"/api/world-books/{book['id']}", headers=auth)
    assert r.status_code == 200 and r.json() == {"success": True}
    assert client.get(f"/api/world-books/{book['id']}").status_code == 404
    assert client.get("/api/world-books").json() == []


def test_create_book_with_id_and_entries(client: TestClient, auth: dict[str, str]) -> None:
    book = _book(client, auth, id="omphalos", entries=[ORACLE, RULE])
    assert book["id"] == "omphalos" and book["entry_count"] == 2
    assert [e["name"] for e in book["entries"]] == ["白塔旧誓", "世界基础规则"]
    assert book["entries"][0]["id"] == "white_tower_oath"
    assert book["entries"][1]["id"]  # generated


def test_create_book_conflict_is_409(client: TestClient, auth: dict[str, str]) -> None:
    _book(client, auth, id="omphalos")
    r = client.post("/api/world-books", json={"id": "omphalos", "name": "again"}, headers=auth)
    assert r.status_code == 409
    assert r.json()["success"] is False and "omphalos" in r.json()["error"]


def test_create_book_bad_bodies_are_422_naming_the_field(
    client: TestClient, auth: dict[str, str]
) -> None:
    cases = [
        ({}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "x", "enabled": "perhaps"}, "enabled"),
        ({"name": "x", "surprise": 1}, "surprise"),
        ({"name": "x", "character_ids": "风堇"}, "character_ids"),
        ({"name": "x\x00y"}, "name"),
        ({"name": "x", "entries": [{"name": "e", "match_mode": "some"}]}, "match_mode"),
    ]
    for body, field in cases:
        r = client.post("/api/world-books", json=body, headers=auth)
        assert r.status_code == 422, (body, r.text)
        data = r.json()
        assert data["success"] is False and field in data["error"], (body, data)
        assert any(field in map(str, d["loc"]) for d in data["detail"]), (body, data)
    assert client.get("/api/world-books").json() == []


def test_update_book_errors(client: TestClient, auth: dict[str, str]) -> None:
    book = _book(client, auth)
    url = f"/api/world-books/{book['id']}"
    assert client.put("/api/world-books/nope", json={"name": "n"}, headers=auth).status_code == 404
    empty = client.put(url, json={}, headers=auth)
    assert empty.status_code == 422 and "no fields" in empty.json()["error"]
    bad = client.put(url, json={"entries": []}, headers=auth)
    assert bad.status_code == 422 and "entries" in bad.json()["error"]
    assert client.delete("/api/world-books/nope", headers=auth).status_code == 404


def test_entry_crud_round_trip(client: TestClient, auth: dict[str, str], engine) -> None:
    book = _book(client, auth, id="omphalos")
    base = "/api/world-books/omphalos/entries"
    r = client.post(base, json=ORACLE, headers=auth)
    assert r.status_code == 201, r.text
    entry = r.json()["entry"]
    assert {k: entry[k] for k in ORACLE} == ORACLE
    assert entry["created_at"] and entry["updated_at"]

    r = client.post(base, json=RULE, headers=auth)
    rule_id = r.json()["entry"]["id"]
    assert rule_id

    listed = client.get(base).json()
    assert [e["id"] for e in listed] == ["white_tower_oath", rule_id]
    assert client.get("/api/world-books/omphalos").json()["entry_count"] == 2

    # the seed's entry-update example: every new field, others untouched
    update = {
        "name": "白塔旧誓",
        "entry_type": "event",
        "trigger_sources": ["user", "assistant_recent", "scene_state"],
        "state_triggers": {"location": ["白塔"]},
        "cooldown_turns": 2,
        "weight": 10,
    }
    r = client.put(f"{base}/white_tower_oath", json=update, headers=auth)
    assert r.status_code == 200, r.text
    changed = r.json()["entry"]
    assert {k: changed[k] for k in update} == update
    assert changed["keywords"] == ORACLE["keywords"] and changed["priority"] == 80
    assert changed["created_at"] == entry["created_at"]
    stored = WorldBookStore(engine).get("omphalos").entries[0]
    assert stored.weight == 10 and stored.state_triggers == {"location": ["白塔"]}

    r = client.delete(f"{base}/{rule_id}", headers=auth)
    assert r.status_code == 200 and r.json() == {"success": True}
    assert [e["id"] for e in client.get(base).json()] == ["white_tower_oath"]
    assert book["id"] == "omphalos"


def test_entry_errors(client: TestClient, auth: dict[str, str]) -> None:
    _book(client, auth, id="omphalos")
    base = "/api/world-books/omphalos/entries"
    client.post(base, json=ORACLE, headers=auth)

    assert client.get("/api/world-books/nope/entries").status_code == 404
    assert client.post("/api/world-books/nope/entries", json=RULE, headers=auth).status_code == 404
    dup = client.post(base, json=ORACLE, headers=auth)
    assert dup.status_code == 409 and "white_tower_oath" in dup.json()["error"]

    missing = client.put(f"{base}/nope", json={"name": "x"}, headers=auth)
    assert missing.status_code == 404 and "entry" in missing.json()["error"]
    no_book = client.put("/api/world-books/nope/entries/x", json={"name": "x"}, headers=auth)
    assert no_book.status_code == 404 and "world book" in no_book.json()["error"]
    assert client.delete(f"{base}/nope", headers=auth).status_code == 404
    assert client.delete("/api/world-books/nope/entries/x", headers=auth).status_code == 404

    for body, field in [
        ({"priority": "high"}, "priority"),
        ({"priority": 2**40}, "priority"),
        ({"cooldown_turns": -1}, "cooldown_turns"),
        ({"trigger_sources": ["telepathy"]}, "trigger_sources"),
        ({"entry_type": 7}, "entry_type"),
        ({"keywords": ["ok", "bad\x00"]}, "keywords"),
        ({"state_triggers": {"loc\x00": ["x"]}}, "state_triggers"),
        ({"id": "renamed"}, "id"),
        ({}, "body"),
    ]:
        r = client.put(f"{base}/white_tower_oath", json=body, headers=auth)
        assert r.status_code == 422, (body, r.text)
        assert field in r.json()["error"], (body, r.json())
    # nothing changed by the rejected updates
    assert client.get(base).json()[0]["priority"] == 80


def test_batch_adds_all_or_nothing(client: TestClient, auth: dict[str, str], engine) -> None:
    _book(client, auth, id="omphalos")
    url = "/api/world-books/omphalos/entries/batch"
    r = client.post(url, json={"entries": [ORACLE, RULE]}, headers=auth)
    assert r.status_code == 201, r.text
    data = r.json()
    assert data["success"] is True and data["count"] == 2 and len(data["entries"]) == 2

    bad = {"entries": [{"name": "ok", "keywords": ["a"]}, {"name": "broken", "priority": "x"}]}
    r = client.post(url, json=bad, headers=auth)
    assert r.status_code == 422
    assert "entries.1.priority" in r.json()["error"]
    assert len(WorldBookStore(engine).list_entries("omphalos")) == 2

    dup_inside = {"entries": [{"id": "a", "name": "a"}, {"id": "a", "name": "again"}]}
    r = client.post(url, json=dup_inside, headers=auth)
    assert r.status_code == 422 and "'a'" in r.json()["error"]

    taken = {"entries": [{"id": "new", "name": "n"}, {"id": "white_tower_oath", "name": "x"}]}
    r = client.post(url, json=taken, headers=auth)
    assert r.status_code == 409 and "white_tower_oath" in r.json()["error"]
    assert len(WorldBookStore(engine).list_entries("omphalos")) == 2

    assert client.post(url, json={"entries": []}, headers=auth).status_code == 422
    missing = client.post(
        "/api/world-books/nope/entries/batch", json={"entries": [RULE]}, headers=auth
    )
    assert missing.status_code == 404


def test_path_ids_with_nul_are_422_not_database_errors(
    client: TestClient, auth: dict[str, str]
) -> None:
    assert client.get("/api/world-books/a%00b").status_code == 422
    assert client.get("/api/world-books/a%00b/entries").status_code == 422
    r = client.delete("/api/world-books/ok/entries/a%00b", headers=auth)
    assert r.status_code == 422 and "entry_id" in r.json()["error"]


def test_unicode_ids_work(client: TestClient, auth: dict[str, str]) -> None:
    _book(client, auth, id="翁法罗斯 world")
    r = client.get("/api/world-books/翁法罗斯 world")
    assert r.status_code == 200 and r.json()["id"] == "翁法罗斯 world"
    r = client.post("/api/world-books/翁法罗斯 world/entries", json={"id": "白塔"}, headers=auth)
    assert r.status_code == 201
    assert client.delete("/api/world-books/翁法罗斯 world/entries/白塔", headers=auth).json() == {
        "success": True
    }
