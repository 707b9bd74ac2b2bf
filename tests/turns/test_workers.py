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


def test_more_attempts_than_celerys_default_still_end_the_turn_failed(live, workers) -> None:
    # Six LLM attempts (Celery's own default cap is three retries): the runner, not Celery,
    # decides when to give up, and the turn ends failed with the reason.
    workers.start(
        extra_env={
            "NEKOFLOW_LLM_PROVIDER": "openai",
            "NEKOFLOW_LLM_BASE_URL": "http://127.0.0.1:9/v1",  # nothing listens: connect error
            "NEKOFLOW_LLM_API_KEY": "unused",
            "NEKOFLOW_LLM_CONNECT_TIMEOUT": "0.5",
            "NEKOFLOW_LLM_MAX_ATTEMPTS": "6",
            "NEKOFLOW_LLM_BACKOFF_BASE": "0",
            "NEKOFLOW_LLM_BACKOFF_MAX": "0",
        }
    )
    handle = enqueue_turn("web", web_event("你还在吗"))
    rendered = handle.wait(timeout=60)
    run = handle.run()
    assert run.status == "failed", workers.logs()
    assert run.llm_attempts == 6 and "LLM call failed after 6 attempt(s)" in run.reason
    assert rendered == [{"type": "text", "content": live.settings.failure_reply}]
    assert "MaxRetriesExceeded" not in workers.logs()


def test_a_message_for_an_unknown_turn_is_dropped_not_retried(live, workers) -> None:
    from tasks.turns import publish_turn

    workers.start()
    publish_turn(TurnRun(turn_id="ghost", channel="web", scope_id="web:conversation:x"))
    handle = enqueue_turn("web", web_event("之后的一句"))
    assert handle.wait(timeout=30) and handle.status() == "done"
    assert "retrying" not in workers.logs()
