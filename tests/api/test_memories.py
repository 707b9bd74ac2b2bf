"""``/api/memories``: list, show and forget a scope's memories (bearer token needed)."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session

from nekoflow.memory.store import write_memories
from nekoflow.settings import Settings
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import MemoryRecord

AT = datetime(2026, 3, 1, tzinfo=UTC)


def _seed(engine: Engine) -> int:
    with Session(engine) as s:
        role = Role(name="钦灵")
        s.add(role)
        s.flush()
        assert role.id is not None
        rows = [
            MemoryRecord(
                role_id=role.id, scope_id="web:u1", content=c, importance=0.5, created_at=AT
            )
            for c in ("我叫小明", "我最喜欢草莓蛋糕", "其实我叫小红")
        ]
        write_memories(s, rows, now=AT, settings=Settings(database_url="sqlite://"))
        s.commit()
        return role.id


def test_list_show_forget(client: TestClient, engine: Engine, auth: dict) -> None:
    role_id = _seed(engine)
    r = client.get("/api/memories", params={"character": "钦灵", "scope": "web:u1"}, headers=auth)
    assert r.status_code == 200, r.text
    live = r.json()["memories"]
    assert [m["content"] for m in live] == ["其实我叫小红", "我最喜欢草莓蛋糕"]
    r = client.get(
        "/api/memories",
        params={"character": str(role_id), "scope": "web:u1", "history": "true"},
        headers=auth,
    )
    everything = r.json()["memories"]
    assert len(everything) == 3 and everything[-1]["superseded_by"] == live[0]["id"]
    one = client.get(f"/api/memories/{live[1]['id']}", headers=auth)
    assert one.status_code == 200 and one.json()["content"] == "我最喜欢草莓蛋糕"
    gone = client.delete(f"/api/memories/{live[0]['id']}", headers=auth)
    assert gone.status_code == 200 and gone.json() == {"deleted": 2}  # with the fact it replaced
    assert client.get(f"/api/memories/{live[0]['id']}", headers=auth).status_code == 404
    assert client.delete(f"/api/memories/{live[0]['id']}", headers=auth).status_code == 404


def test_bad_input_names_the_field(client: TestClient, engine: Engine, auth: dict) -> None:
    _seed(engine)
    cases = [
        ({"scope": "web:u1"}, "character"),
        ({"character": "无名", "scope": "web:u1"}, "character"),
        ({"character": "钦灵"}, "scope"),
        ({"character": "钦灵", "scope": "web:u1", "limit": "0"}, "limit"),
    ]
    for params, field in cases:
        r = client.get("/api/memories", params=params, headers=auth)
        assert r.status_code == 422, (params, r.text)
        assert field in r.text, (params, r.text)
    assert client.get("/api/memories/abc", headers=auth).status_code == 422


def test_memories_need_the_token(client: TestClient, engine: Engine) -> None:
    _seed(engine)
    assert (
        client.get("/api/memories", params={"character": "1", "scope": "web:u1"}).status_code == 401
    )
    assert client.delete("/api/memories/1").status_code == 401
