"""Voice on the Web channel: the turn result lists each voiced line with its audio URL, the
URL serves the clip (same auth as turn reads), and the turn's event stream sends a ``voice``
event per line after its final event. The turn runs in process; the synthesis stage runs as
its task would, against the loopback speech server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from nekoflow.speech.settings import get_speech_settings
from nekoflow.turns.speech_synth import SpeechDeps, synthesize_turn
from tests.api.conftest import (  # noqa: F401  (fixtures)
    Publisher,
    api_settings,
    auth,
    character,
    make_client,
    publisher,
    read_events,
    turn_client,
    turn_deps,
    web_event,
)
from tests.speech.speech_server import KEY, SpeechServer


@pytest.fixture
def speech_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[SpeechServer]:
    server = SpeechServer()
    monkeypatch.setenv("NEKOFLOW_SPEECH_ENABLED", "true")
    monkeypatch.setenv("NEKOFLOW_SPEECH_OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("NEKOFLOW_SPEECH_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("NEKOFLOW_SPEECH_SPEAK_TEXT", "true")  # lines without a spoken part too
    get_speech_settings.cache_clear()
    yield server
    get_speech_settings.cache_clear()
    server.close()


def test_web_turn_result_and_events_carry_the_voice(
    speech_env: SpeechServer,
    turn_client: TestClient,  # noqa: F811
    auth: dict,  # noqa: F811
    publisher: Publisher,  # noqa: F811
) -> None:
    publisher.inline = True
    r = turn_client.post("/api/web/chat", json={**web_event("你好呀"), "wait": 5}, headers=auth)
    assert r.status_code == 200 and r.json()["status"] == "done", r.text
    turn_id = r.json()["turn_id"]
    engine = publisher.deps.engine  # type: ignore[union-attr]
    out = synthesize_turn(SpeechDeps(engine=engine, config_path="absent.ini"), turn_id)
    assert out.parts and out.failed == 0
    voice = turn_client.get(f"/api/turns/{turn_id}", headers=auth).json()["voice"]
    assert [v["part"] for v in voice] == list(range(out.parts))
    assert all(v["state"] == "ready" and v["format"] == "mp3" for v in voice)
    audio = turn_client.get(voice[0]["url"], headers=auth)
    assert audio.status_code == 200 and audio.headers["content-type"] == "audio/mpeg"
    assert audio.content.startswith(b"ID3")
    assert turn_client.get(voice[0]["url"]).status_code == 401  # a read: the token
    events = read_events(turn_client, f"/api/turns/{turn_id}/events", auth)
    names = [name for name, _ in events]
    assert names == ["done"] + ["voice"] * out.parts
    assert [d["url"] for n, d in events if n == "voice"] == [v["url"] for v in voice]
    missing = turn_client.get("/api/voice/" + "0" * 64, headers=auth)
    assert missing.status_code == 404
