"""``POST /api/web/chat`` refuses at submit what would only fail later: no message (422 naming
``message``, no turn stored) and an unknown ``character_id`` (422 naming it, not 202 then a
turn failing at dispatch)."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from nekoflow.storage.turns import TurnRun
from tests.api.conftest import web_event


def _turns(engine) -> int:
    with Session(engine) as s:
        return len(s.exec(select(TurnRun)).all())


def test_message_is_required(turn_client: TestClient, auth: dict, engine) -> None:
    for body in (
        {"session_id": "s1"},
        {"session_id": "s1", "message": ""},
        {"session_id": "s1", "message": "   \n"},
    ):
        r = turn_client.post("/api/web/chat", json=body, headers=auth)
        assert r.status_code == 422, r.text
        assert "message" in str(r.json()["detail"]), r.json()
    assert _turns(engine) == 0


def test_attachments_alone_are_a_message(turn_client: TestClient, auth: dict) -> None:
    body = {"session_id": "s1", "attachments": [{"type": "image", "url": "https://x/y.png"}]}
    r = turn_client.post("/api/web/chat", json=body, headers=auth)
    assert r.status_code in (200, 202), r.text


def test_unknown_character_is_422_at_submit(
    turn_client: TestClient, auth: dict, engine, character
) -> None:
    r = turn_client.post(
        "/api/web/chat", json={**web_event("你好"), "character_id": "无此人"}, headers=auth
    )
    assert r.status_code == 422, r.text
    assert "character_id" in str(r.json()["detail"])
    assert _turns(engine) == 0
    for known in (character.name, str(character.id)):
        ok = turn_client.post(
            "/api/web/chat", json={**web_event("你好"), "character_id": known}, headers=auth
        )
        assert ok.status_code in (200, 202), ok.text
