"""``token`` events on ``GET /api/turns/{id}/events``: a real Celery worker, the real test Redis
and a loopback OpenAI-compatible server that streams its answer (and once cuts it mid-way).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from nekoflow.storage.turns import TurnStage
from tests.api.conftest import web_event
from tests.turns.conftest import Workers, worker_env, workers
from tests.turns.llm_server import Answer, FakeLLM, completion

__all__ = ["worker_env", "workers"]  # fixtures used here

REPLY = "【开心】你好呀莱姆~<こんにちは>(摇尾巴)今天也一起玩吧!【期待】好不好嘛……"
FIRST_TOKEN_DELAY = 0.3
"""The model's own time to first token (the pieces then come 10 ms apart)."""


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    def script(body: dict[str, Any], n: int) -> Answer:
        return 200, completion(REPLY), {}, FIRST_TOKEN_DELAY

    with FakeLLM(script, chunk_chars=3, chunk_delay=0.01) as fake:
        yield fake


@pytest.fixture
def live_client(
    make_client: Callable[..., TestClient], worker_env: dict[str, str], character
) -> TestClient:
    """The app as deployed, on the workers' Redis prefix and runtime config."""
    return make_client(
        runtime_config_path=worker_env["NEKOFLOW_RUNTIME_CONFIG_PATH"],
        redis_prefix=worker_env["NEKOFLOW_REDIS_PREFIX"],
    )


def stored_text(engine, turn_id: str) -> str:
    with Session(engine) as s:
        return s.get(TurnStage, (turn_id, "llm_call")).result["text"]


def stream_turn(
    client: TestClient, auth: dict, session: str, start_workers: Callable[[], Any]
) -> tuple[str, list]:
    """Submit a turn, open its event stream, and only once the stream is subscribed (its
    first event arrived) start the workers; return the turn id and every event."""
    r = client.post(
        "/api/turns", json={"channel": "web", "event": web_event("你好呀", session)}, headers=auth
    )
    assert r.status_code == 202, r.text
    turn_id = r.json()["turn_id"]
    events: list[tuple[str, dict]] = []

    def read() -> None:
        url = f"/api/turns/{turn_id}/events?timeout=90"
        with client.stream("GET", url, headers=auth) as response:
            assert response.status_code == 200
            name = ""
            for line in response.iter_lines():
                if line.startswith("event: "):
                    name = line[len("event: ") :]
                elif line.startswith("data: "):
                    events.append((name, json.loads(line[len("data: ") :])))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 30
    while not events and time.monotonic() < deadline:
        time.sleep(0.02)
    assert events and events[0][0] == "status", events
    start_workers()
    reader.join(120)
    return turn_id, events


def test_sse_sends_tokens_in_order_then_done(
    live_client: TestClient, auth: dict, workers: Workers, llm: FakeLLM, engine
) -> None:
    start = lambda: workers.start(extra_env=llm.env())  # noqa: E731
    turn_id, events = stream_turn(live_client, auth, "tok", start)
    names = [name for name, _ in events]
    assert names[-1] == "done", f"{names}\n{workers.logs()}"
    assert set(names) <= {"status", "token", "done"} and "reset" not in names
    tokens = [data for name, data in events if name == "token"]
    assert len(tokens) > 1, names
    assert names.index("token") < names.index("done")
    assert [t["seq"] for t in tokens] == list(range(len(tokens)))  # in order, none missing
    offsets = [t["offset"] for t in tokens]
    assert offsets == sorted(offsets) and offsets[0] == 0 and tokens[-1].get("end") is True
    assert {t["attempt"] for t in tokens} == {1}
    text = "".join(t["text"] for t in tokens)
    assert text == stored_text(engine, turn_id) == REPLY
    assert llm.calls[0]["stream"] is True


def test_a_retried_stream_shows_a_reset(
    live_client: TestClient, auth: dict, workers: Workers, llm: FakeLLM, engine
) -> None:
    llm.cut_after[1] = 3  # the first attempt dies after three pieces
    start = lambda: workers.start(extra_env=llm.env())  # noqa: E731
    turn_id, events = stream_turn(live_client, auth, "cut", start)
    names = [name for name, _ in events]
    assert names[-1] == "done", f"{names}\n{workers.logs()}"
    assert "reset" in names, names
    reset = names.index("reset")
    before = [d for n, d in events[:reset] if n == "token"]
    after = [d for n, d in events[reset + 1 :] if n == "token"]
    assert before and {t["attempt"] for t in before} == {1}
    assert events[reset][1] == {"attempt": 1}
    assert after and {t["attempt"] for t in after} == {2}
    assert "".join(t["text"] for t in after) == stored_text(engine, turn_id) == REPLY
    assert len(llm.calls) == 2


def test_the_offline_scripted_model_streams_to_the_web_too(
    live_client: TestClient, auth: dict, workers: Workers, engine
) -> None:
    # NEKOFLOW_LLM_PROVIDER unset: the scripted model
    turn_id, events = stream_turn(live_client, auth, "scripted", workers.start)
    names = [name for name, _ in events]
    assert names[-1] == "done", f"{names}\n{workers.logs()}"
    tokens = [data for name, data in events if name == "token"]
    assert tokens and tokens[-1].get("end") is True, names
    assert "".join(t["text"] for t in tokens) == stored_text(engine, turn_id)
