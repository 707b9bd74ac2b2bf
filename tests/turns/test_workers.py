"""Turns through real Celery worker processes, real Redis broker, SQLite and PostgreSQL."""

from __future__ import annotations

from sqlmodel import Session, select

from nekoflow.storage.turns import TurnRun
from tasks import enqueue_turn


def web_event(text: str, session: str = "s1", message_id: str | None = None) -> dict:
    ev = {"session_id": session, "message": text, "user_id": "u1", "display_name": "莱姆"}
    if message_id:
        ev["message_id"] = message_id
    return ev


def test_turn_round_trip_through_real_worker(live, workers) -> None:
    workers.start()
    handle = enqueue_turn("web", web_event("你好呀,谢谢你"))
    rendered = handle.wait(timeout=30)
    assert handle.status() == "done", handle.reason
    assert rendered and rendered[0]["type"] == "text" and rendered[0]["content"]
    with Session(live.engine) as s:
        run = s.get(TurnRun, handle.turn_id)
        assert run.stage == "apply_deltas" and run.prompt_tokens


def test_skipped_turn_publishes_nothing(live, workers) -> None:
    handle = enqueue_turn(
        "qq", {"post_type": "meta_event", "meta_event_type": "heartbeat", "self_id": 1, "time": 1}
    )
    assert handle.status() == "skipped" and handle.reason == "not a chat message"
    with Session(live.engine) as s:
        assert s.exec(select(TurnRun)).all() == []
