"""The deliver stage with voice rows, in process on the real database (a recording sender, the
loopback speech server): text first without waiting for speech, then one voice chunk per voiced
line once synthesized; a failed synthesis, a synthesis that never comes, or a platform refusing
the voice fails the voice chunk alone and the turn's delivery is still ``sent``."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from nekoflow.delivery import outbox
from nekoflow.delivery.base import Chunk, Destination, PermanentFailure, SendResult
from nekoflow.delivery.ratelimit import InMemoryRateLimiter
from nekoflow.delivery.registry import register_destination
from nekoflow.delivery.settings import DeliverySettings
from nekoflow.settings import Settings
from nekoflow.speech.settings import get_speech_settings
from nekoflow.storage.dialogue import Line, Role, Save, utcnow
from nekoflow.storage.turns import TurnRun
from nekoflow.turns import store as turn_store
from nekoflow.turns.delivery import DeliveryDeps, deliver_turn
from nekoflow.turns.speech_synth import SpeechDeps, synthesize_turn
from tests.speech.speech_server import KEY, SpeechServer

CHANNEL = "voicetest"
_ids = itertools.count(1)


class Recorder:
    """A sender that records what it was asked to send (and can refuse voice)."""

    idempotent = False

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, bytes | None]] = []
        self.refuse_voice = False

    def send(self, dest: Destination, chunk: Chunk, *, key: str) -> SendResult:
        if chunk.kind == "voice" and self.refuse_voice:
            raise PermanentFailure(f"chunk {chunk.index}: voice refused (HTTP 400)")
        self.sent.append((chunk.kind, key, chunk.payload.get("audio")))
        return SendResult(platform_message_id=str(len(self.sent)))

    def typing(self, dest: Destination) -> None:
        """Nothing to show."""


def _destination(request, bot):  # type: ignore[no-untyped-def]
    return Destination(platform="rec", chat_type="private", chat_id=request.conversation_id)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[SpeechServer]:
    s = SpeechServer()
    monkeypatch.setenv("NEKOFLOW_SPEECH_ENABLED", "true")
    monkeypatch.setenv("NEKOFLOW_SPEECH_OPENAI_BASE_URL", s.url + "/v1")
    monkeypatch.setenv("NEKOFLOW_SPEECH_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("NEKOFLOW_SPEECH_WAIT_SECONDS", "30")
    get_speech_settings.cache_clear()
    register_destination(CHANNEL, _destination)
    yield s
    get_speech_settings.cache_clear()
    s.close()


def _turn(engine: Engine, spoken: list[str]) -> str:
    turn_id = f"vd-{next(_ids)}"
    with Session(engine) as s:
        role = Role.new("钦灵")
        s.add(role)
        s.commit()
        save = Save(role_id=role.id, scope_id=f"{CHANNEL}:{turn_id}")  # type: ignore[arg-type]
        s.add(save)
        s.commit()
        s.add(
            TurnRun(
                turn_id=turn_id,
                channel=CHANNEL,
                scope_id=save.scope_id,
                seq=1,
                status="done",
                role_id=role.id,
                save_id=save.id,
                request={"channel": CHANNEL, "conversation_id": turn_id},
                rendered=[{"type": "text", "content": "你好"}, {"type": "text", "content": "喵"}],
                delivery_status="pending",
            )
        )
        s.commit()
        for tts in spoken:
            s.add(Line(content="…", tts_content=tts, attribute="assistant", save_id=save.id,
                       turn_id=turn_id, role_id=role.id))  # fmt: skip
        s.commit()
    return turn_id


def _deps(engine: Engine, tmp_path, rec: Recorder) -> DeliveryDeps:
    settings = Settings(database_url=str(engine.url), runtime_config_path=str(tmp_path / "x.ini"))
    return DeliveryDeps(
        engine=engine,
        settings=settings,
        delivery=DeliverySettings(rate_limit_enabled=False),
        limiter=InMemoryRateLimiter(),
        senders=lambda platform, bot, s: rec,
    )


def _synth(engine: Engine, tmp_path, turn_id: str) -> None:
    synthesize_turn(SpeechDeps(engine=engine, config_path=str(tmp_path / "x.ini")), turn_id)


def test_text_goes_first_then_each_voice_once(engine: Engine, server: SpeechServer, tmp_path):
    rec = Recorder()
    deps = _deps(engine, tmp_path, rec)
    turn_id = _turn(engine, ["こんにちは", "またね"])
    waiting = deliver_turn(deps, turn_id)
    assert (waiting.kind, waiting.reason) == ("retry", "chunk 2 waits for its voice")
    assert [k for k, _, _ in rec.sent] == ["text", "text"]  # the text never waits for speech
    _synth(engine, tmp_path, turn_id)
    assert deliver_turn(deps, turn_id).kind == "done"
    assert deliver_turn(deps, turn_id).kind == "done"  # a second run sends nothing again
    assert [(k, key) for k, key, _ in rec.sent] == [
        ("text", f"{turn_id}:0"),
        ("text", f"{turn_id}:1"),
        ("voice", f"{turn_id}:2"),
        ("voice", f"{turn_id}:3"),
    ]
    assert all(audio and audio.startswith(b"ID3") for k, _, audio in rec.sent if k == "voice")
    run = turn_store.get_run(engine, turn_id)
    assert run is not None and (run.delivery_status, run.delivery_reason) == ("sent", None)
    rows = outbox.rows_for(engine, turn_id)
    assert all("audio" not in r.payload for r in rows)  # audio never rides in the outbox


def test_failed_synthesis_fails_the_voice_alone(engine: Engine, server: SpeechServer, tmp_path):
    rec = Recorder()
    deps = _deps(engine, tmp_path, rec)
    turn_id = _turn(engine, ["秘密"])
    server.state.fail_status = 500
    _synth(engine, tmp_path, turn_id)
    assert deliver_turn(deps, turn_id).kind == "done"
    assert [k for k, _, _ in rec.sent] == ["text", "text"]
    voice = outbox.rows_for(engine, turn_id)[2]
    assert (voice.status, voice.error) == ("failed", "voice: openai speech: HTTP 500")
    run = turn_store.get_run(engine, turn_id)
    assert run is not None and run.delivery_status == "sent"
    assert run.delivery_reason == "voice chunk 2 failed: voice: openai speech: HTTP 500"
    assert "秘密" not in run.delivery_reason


def test_a_synthesis_that_never_comes_is_given_up_after_the_wait(
    engine: Engine, server: SpeechServer, tmp_path
):
    rec = Recorder()
    deps = _deps(engine, tmp_path, rec)
    turn_id = _turn(engine, ["こんにちは"])
    assert deliver_turn(deps, turn_id).kind == "retry"
    later = utcnow() + timedelta(seconds=31)
    deps.now = lambda: later  # an injected clock: past NEKOFLOW_SPEECH_WAIT_SECONDS
    assert deliver_turn(deps, turn_id).kind == "done"
    voice = outbox.rows_for(engine, turn_id)[2]
    assert (voice.status, voice.error) == ("failed", "voice: not synthesized within 30s")
    run = turn_store.get_run(engine, turn_id)
    assert run is not None and run.delivery_status == "sent"


def test_platform_refusing_the_voice_keeps_the_text(engine: Engine, server: SpeechServer, tmp_path):
    rec = Recorder()
    rec.refuse_voice = True
    deps = _deps(engine, tmp_path, rec)
    turn_id = _turn(engine, ["こんにちは"])
    _synth(engine, tmp_path, turn_id)
    assert deliver_turn(deps, turn_id).kind == "done"
    assert [k for k, _, _ in rec.sent] == ["text", "text"]
    run = turn_store.get_run(engine, turn_id)
    assert run is not None and run.delivery_status == "sent"
    assert "voice refused (HTTP 400)" in (run.delivery_reason or "")
