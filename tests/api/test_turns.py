"""``/api/turns``, ``/api/web/chat`` and turn events, turns run in process (no broker)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from nekoflow.storage.turns import STAGES
from nekoflow.turns.runner import run_inline
from tests.api.conftest import Publisher, read_events, web_event


def test_post_turn_queues_and_get_shows_progress(
    turn_client: TestClient, auth: dict, publisher: Publisher, turn_deps
) -> None:
    r = turn_client.post(
        "/api/turns", json={"channel": "web", "event": web_event("你好")}, headers=auth
    )
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["status"] == "queued" and body["channel"] == "web"
    turn_id = body["turn_id"]
    assert publisher.turn_ids == [turn_id]

    queued = turn_client.get(f"/api/turns/{turn_id}", headers=auth).json()
    assert queued["status"] == "queued" and queued["stages"] == [] and queued["rendered"] is None
    assert queued["role_id"] is None

    assert run_inline(turn_deps, turn_id, sleep=False) == "ok"
    done = turn_client.get(f"/api/turns/{turn_id}", headers=auth).json()
    assert done["status"] == "done" and done["stage"] == "apply_deltas"
    assert [s["stage"] for s in done["stages"]] == list(STAGES)
    assert all(s["at"] for s in done["stages"])
    assert done["rendered"][0]["type"] == "text" and done["rendered"][0]["content"]
    assert done["llm"]["model"] == "scripted" and done["llm"]["prompt_tokens"]
    assert done["finished_at"] and "message" not in done
    assert isinstance(done["role_id"], int)  # the character that answered


def test_post_turn_skipped_is_200_with_reason(turn_client: TestClient, auth: dict) -> None:
    event = {"type": "ping", "session_id": "s1"}
    r = turn_client.post("/api/turns", json={"channel": "web", "event": event}, headers=auth)
    assert r.status_code == 200, r.text
    assert r.json() == {
        "turn_id": None,
        "status": "skipped",
        "reason": "not a chat message",
        "channel": "web",
    }


def test_post_turn_aliases_resolve(turn_client: TestClient, auth: dict) -> None:
    heartbeat = {"post_type": "meta_event", "meta_event_type": "heartbeat", "self_id": 1, "time": 1}
    r = turn_client.post("/api/turns", json={"channel": "OneBot", "event": heartbeat}, headers=auth)
    assert r.status_code == 200 and r.json()["status"] == "skipped"


def test_post_turn_bad_input_is_422_naming_the_field(turn_client: TestClient, auth: dict) -> None:
    cases = [
        ({"channel": "irc", "event": web_event("hi")}, ["body", "channel"], "unknown channel"),
        ({"channel": "web", "event": {"message": "hi"}}, ["body", "event", "session_id"], ""),
        ({"channel": "web", "event": web_event("hi", session="  ")}, ["body", "event"], ""),
        ({"channel": "web", "event": "not an object"}, ["body", "event"], ""),
        ({"channel": "web"}, ["body", "event"], ""),
        ({"channel": "web", "event": web_event("a\x00b")}, ["body", "event"], "NUL"),
        ({"channel": "web", "event": web_event("hi", attachments="x")}, ["body", "event"], ""),
    ]
    for body, loc, words in cases:
        r = turn_client.post("/api/turns", json=body, headers=auth)
        assert r.status_code == 422, (body, r.text)
        got = r.json()
        assert got["detail"][0]["loc"][: len(loc)] == loc, (body, got)
        assert words in got["error"], got


def test_turn_endpoints_need_the_token_for_writes(turn_client: TestClient) -> None:
    body = {"channel": "web", "event": web_event("hi")}
    assert turn_client.post("/api/turns", json=body).status_code == 401
    bad = {"Authorization": "Bearer nope"}
    assert turn_client.post("/api/turns", json=body, headers=bad).status_code == 401
    assert turn_client.post("/api/web/chat", json=web_event("hi")).status_code == 401


def test_unknown_turn_is_404(turn_client: TestClient, auth: dict) -> None:
    for url in ("/api/turns/0123abcd", "/api/turns/0123abcd/events"):
        r = turn_client.get(url, headers=auth)
        assert r.status_code == 404 and "not found" in r.json()["error"]


def test_web_chat_waits_for_the_reply(
    turn_client: TestClient, auth: dict, publisher: Publisher
) -> None:
    publisher.inline = True
    r = turn_client.post("/api/web/chat", json={**web_event("你好呀"), "wait": 5}, headers=auth)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "done" and body["messages"][0]["content"]
    assert body["turn_url"] == f"/api/turns/{body['turn_id']}"
    assert publisher.turn_ids == [body["turn_id"]]
    events = read_events(turn_client, body["events_url"], auth)
    assert [name for name, _ in events] == ["done"]
    assert events[0][1]["rendered"] == body["messages"]


def test_web_chat_without_wait_is_202_to_poll(
    turn_client: TestClient, auth: dict, publisher: Publisher
) -> None:
    r = turn_client.post("/api/web/chat", json=web_event("在吗", message_id="m1"), headers=auth)
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["status"] == "queued" and body["messages"] == []
    assert body["events_url"] == f"/api/turns/{body['turn_id']}/events"
    # a redelivered message (same message id) is the same turn, published once
    again = turn_client.post("/api/web/chat", json=web_event("在吗", message_id="m1"), headers=auth)
    assert again.json()["turn_id"] == body["turn_id"]
    assert publisher.turn_ids == [body["turn_id"]]


def test_web_chat_stream_times_out_on_a_stuck_turn(turn_client: TestClient, auth: dict) -> None:
    r = turn_client.post("/api/web/chat", json=web_event("在吗"), headers=auth)
    events = read_events(turn_client, f"{r.json()['events_url']}?timeout=0.3", auth)
    assert [name for name, _ in events] == ["status", "timeout"]
    assert events[0][1]["status"] == "queued"


def test_web_chat_bad_input_is_422(turn_client: TestClient, auth: dict) -> None:
    cases = [
        ({"message": "hi"}, ["body", "session_id"]),
        ({"session_id": " ", "message": "hi"}, ["body", "session_id"]),
        ({**web_event("hi"), "wait": 61}, ["body", "wait"]),
        ({**web_event("hi"), "wait": -1}, ["body", "wait"]),
        ({**web_event("hi"), "attachments": [{"url": "x"}]}, ["body", "attachments"]),
        ({**web_event("hi"), "surprise": 1}, ["body", "surprise"]),
    ]
    for body, loc in cases:
        r = turn_client.post("/api/web/chat", json=body, headers=auth)
        assert r.status_code == 422, (body, r.text)
        assert r.json()["detail"][0]["loc"][: len(loc)] == loc, (body, r.json())
