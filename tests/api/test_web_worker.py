"""``POST /api/web/chat`` and the turn event stream against a real Celery worker process.

The app builds its own TurnDeps (publishing through the Celery app to the test Redis); the worker
runs on the same test database (SQLite file or PostgreSQL schema) and the same broker.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from nekoflow.storage.turns import STAGES, TurnRun
from tests.api.conftest import read_events, web_event
from tests.turns.conftest import Workers, worker_env, workers

__all__ = ["worker_env", "workers"]  # fixtures used here


@pytest.fixture
def live_client(
    make_client: Callable[..., TestClient], worker_env: dict[str, str], character
) -> TestClient:
    """The app as deployed: no injected TurnDeps, same runtime config as the worker."""
    return make_client(runtime_config_path=worker_env["NEKOFLOW_RUNTIME_CONFIG_PATH"])


def test_web_chat_round_trip_through_a_real_worker(
    live_client: TestClient, auth: dict, workers: Workers
) -> None:
    workers.start()
    r = live_client.post(
        "/api/web/chat", json={**web_event("你好呀,谢谢你"), "wait": 60}, headers=auth
    )
    assert r.status_code == 200, f"{r.text}\n{workers.logs()}"
    body = r.json()
    assert body["status"] == "done", body
    assert body["messages"][0]["type"] == "text" and body["messages"][0]["content"]

    turn = live_client.get(body["turn_url"], headers=auth).json()
    assert [s["stage"] for s in turn["stages"]] == list(STAGES)
    assert turn["rendered"] == body["messages"] and turn["llm"]["model"] == "scripted"


def test_event_stream_follows_a_worker_turn_to_its_end(
    live_client: TestClient, auth: dict, workers: Workers, engine
) -> None:
    workers.start()
    r = live_client.post("/api/web/chat", json=web_event("在吗?", session="s2"), headers=auth)
    assert r.status_code in (200, 202), r.text
    body = r.json()
    events = read_events(live_client, f"{body['events_url']}?timeout=60", auth)
    names = [name for name, _ in events]
    assert names[-1] == "done", f"{events}\n{workers.logs()}"
    assert set(names[:-1]) <= {"status"}
    final = events[-1][1]
    assert final["turn_id"] == body["turn_id"] and final["rendered"][0]["content"]
    assert [s["stage"] for s in final["stages"]] == list(STAGES)
    with Session(engine) as s:
        assert s.get(TurnRun, body["turn_id"]).status == "done"


def test_turn_is_kept_when_the_broker_is_down(
    live_client: TestClient, auth: dict, monkeypatch: pytest.MonkeyPatch, engine
) -> None:
    def broker_down(run: TurnRun) -> None:
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr("tasks.turns.publish_turn", broker_down)
    r = live_client.post(
        "/api/turns", json={"channel": "web", "event": web_event("hi")}, headers=auth
    )
    assert r.status_code == 202, r.text
    with Session(engine) as s:
        run = s.get(TurnRun, r.json()["turn_id"])
        assert run.status == "queued"  # the sweeper publishes it once its lease runs out
