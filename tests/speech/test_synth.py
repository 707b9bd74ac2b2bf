"""Both providers against the loopback speech server, and the synthesis stage in process on the
real database: parts settled once, the cache (a repeated line costs nothing), the per-line time
budget, failures with text-free reasons, SILK for QQ's official bot."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from nekoflow.speech import store
from nekoflow.speech.base import SpeechError, SpeechTimeout
from nekoflow.speech.convert import wav_to_silk
from nekoflow.speech.gpt_sovits import GPTSoVITSSpeech
from nekoflow.speech.openai_speech import OpenAISpeech
from nekoflow.speech.settings import SpeechSettings, VoiceProfile
from nekoflow.storage.dialogue import Line, Role, Save
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.speech_synth import SpeechDeps, synthesize_turn
from tests.speech.speech_server import KEY, SpeechServer, wav_bytes

_turns = itertools.count(1)


@pytest.fixture
def server() -> Iterator[SpeechServer]:
    s = SpeechServer()
    yield s
    s.close()


def test_openai_provider_speaks_the_protocol(server: SpeechServer) -> None:
    speech = OpenAISpeech(server.url + "/v1", KEY, "tts-1")
    audio = speech.synthesize(
        "こんにちは", VoiceProfile(voice="nova", speed=1.2), "ogg_opus", budget=5
    )
    assert audio.startswith(b"OggS")
    (body,) = server.calls("/v1/audio/speech")
    assert body == {
        "model": "tts-1",
        "input": "こんにちは",
        "voice": "nova",
        "response_format": "opus",
        "speed": 1.2,
    }
    with pytest.raises(SpeechError) as refused:
        OpenAISpeech(server.url + "/v1", "wrong", "tts-1").synthesize(
            "こんにちは", VoiceProfile(), "mp3", budget=5
        )
    assert refused.value.reason == "openai speech: HTTP 401 (key refused)"


def test_gpt_sovits_provider_speaks_the_protocol(server: SpeechServer) -> None:
    profile = VoiceProfile(
        provider="gpt_sovits",
        voice="qinling",
        ref_audio_path="ref/qinling.wav",
        prompt_text="参考の文です",
        prompt_lang="ja",
        language="ja",
        speed=0.9,
    )
    audio = GPTSoVITSSpeech(server.url).synthesize("おはよう", profile, "wav", budget=5)
    assert audio.startswith(b"RIFF")
    (body,) = server.calls("/tts")
    assert body["text"] == "おはよう" and body["ref_audio_path"] == "ref/qinling.wav"
    assert (body["media_type"], body["speed_factor"], body["text_lang"]) == ("wav", 0.9, "ja")
    assert body["streaming_mode"] is False
    with pytest.raises(SpeechError) as no_ref:
        GPTSoVITSSpeech(server.url).synthesize("おはよう", VoiceProfile(), "wav", budget=5)
    assert "ref_audio_path" in no_ref.value.reason


def test_budget_and_failures_give_reasons_without_text(server: SpeechServer) -> None:
    speech = OpenAISpeech(server.url + "/v1", KEY, "tts-1", http=httpx.Client())
    server.state.delay = 1.0
    with pytest.raises(SpeechTimeout) as slow:
        speech.synthesize("秘密の言葉", VoiceProfile(), "mp3", budget=0.3)
    assert slow.value.reason == "synthesis exceeded its 0.3s budget"
    server.state.delay = 0.0
    server.state.fail_status = 500
    with pytest.raises(SpeechError) as broken:
        speech.synthesize("秘密の言葉", VoiceProfile(), "mp3", budget=5)
    assert broken.value.reason == "openai speech: HTTP 500"
    assert "秘密" not in slow.value.reason + broken.value.reason


def test_wav_becomes_tencent_silk() -> None:
    silk = wav_to_silk(wav_bytes(rate=24000))
    assert silk.startswith(b"\x02#!SILK_V3")
    with pytest.raises(SpeechError):
        wav_to_silk(b"not a wav")


# --- the synthesis stage on the real database ------------------------------------------------


def _turn(engine: Engine, lines: list[tuple[str, str | None]], *, role: str = "钦灵") -> str:
    """A done Web turn with these assistant lines (content, spoken part)."""
    turn_id = f"voice-{next(_turns)}"
    with Session(engine) as s:
        r = s.exec(Role.__table__.select().where(Role.name == role)).first()  # type: ignore[attr-defined]
        if r is None:
            new = Role.new(role)
            s.add(new)
            s.commit()
            role_id = new.id
        else:
            role_id = r.id
        save = Save(role_id=role_id, scope_id=f"web:{turn_id}")
        s.add(save)
        s.commit()
        s.add(
            TurnRun(
                turn_id=turn_id,
                channel="web",
                scope_id=save.scope_id,
                status="done",
                role_id=role_id,
                save_id=save.id,
                request={"conversation_id": turn_id},
            )
        )
        s.commit()
        for content, tts in lines:
            s.add(
                Line(
                    content=content,
                    tts_content=tts,
                    attribute="assistant",
                    save_id=save.id,
                    turn_id=turn_id,
                    role_id=role_id,
                )
            )
        s.commit()
    return turn_id


def _deps(engine: Engine, server: SpeechServer, tmp_path, **speech: object) -> SpeechDeps:
    settings = SpeechSettings(
        enabled=True,
        openai_base_url=server.url + "/v1",
        openai_api_key=KEY,
        gpt_sovits_url=server.url,
        **speech,  # type: ignore[arg-type]
    )
    return SpeechDeps(engine=engine, config_path=str(tmp_path / "absent.ini"), speech=settings)


def test_synthesis_settles_each_part_once_and_caches_repeated_lines(
    engine: Engine, server: SpeechServer, tmp_path
) -> None:
    deps = _deps(engine, server, tmp_path)
    first = _turn(engine, [("你好", "こんにちは"), ("(动作)", None), ("再见", "またね")])
    out = synthesize_turn(deps, first)
    assert (out.parts, out.synthesized, out.cached, out.failed) == (2, 2, 0, 0)
    parts = store.parts_for(engine, first)
    assert [(p.part, p.state, p.fmt, p.chars, p.cached) for p in parts] == [
        (0, "ready", "mp3", 5, False),
        (1, "ready", "mp3", 3, False),
    ]
    assert synthesize_turn(deps, first).synthesized == 0  # settled parts are never redone
    assert len(server.calls()) == 2
    again = _turn(engine, [("你好", "こんにちは")])  # the same line in a later reply
    assert synthesize_turn(deps, again).cached == 1
    assert len(server.calls()) == 2  # cost nothing
    clip = store.get_clip(engine, store.parts_for(engine, again)[0].clip_key or "")
    assert clip is not None and clip.hits == 1


def test_slow_or_failed_line_fails_alone_with_a_reason(
    engine: Engine, server: SpeechServer, tmp_path
) -> None:
    deps = _deps(engine, server, tmp_path, line_budget_seconds=0.3)
    server.state.delay = 1.0
    turn = _turn(engine, [("秘密", "秘密のこと")])
    assert synthesize_turn(deps, turn).failed == 1
    (part,) = store.parts_for(engine, turn)
    assert (part.state, part.reason) == ("failed", "synthesis exceeded its 0.3s budget")
    server.state.delay = 0.0
    assert synthesize_turn(deps, turn).parts == 1  # failed stays failed: never sent late
    assert store.parts_for(engine, turn)[0].state == "failed"


def test_gpt_sovits_character_voice_and_speak_text(
    engine: Engine, server: SpeechServer, tmp_path
) -> None:
    voice = VoiceProfile(provider="gpt_sovits", ref_audio_path="ref/a.wav", prompt_text="あ")
    deps = _deps(engine, server, tmp_path, characters={"钦灵": voice}, speak_text=True)
    turn = _turn(engine, [("只有文字", None)])
    assert synthesize_turn(deps, turn).synthesized == 1
    (body,) = server.calls("/tts")
    assert body["text"] == "只有文字" and body["ref_audio_path"] == "ref/a.wav"
    (part,) = store.parts_for(engine, turn)
    assert (part.provider, part.fmt, part.state) == ("gpt_sovits", "wav", "ready")


def test_speech_off_or_channel_voice_off_plans_nothing(
    engine: Engine, server: SpeechServer, tmp_path
) -> None:
    turn = _turn(engine, [("你好", "こんにちは")])
    off = _deps(engine, server, tmp_path)
    off.speech = off.speech.model_copy(update={"enabled": False})
    assert synthesize_turn(off, turn).parts == 0
    ini = tmp_path / "config.ini"
    ini.write_text("[character_runtime_web]\nvoice = off\n", encoding="utf-8")
    muted = _deps(engine, server, tmp_path)
    muted.config_path = str(ini)
    assert synthesize_turn(muted, turn).parts == 0
    assert server.calls() == []


def test_usage_counts_characters_synthesized_per_provider(
    engine: Engine, server: SpeechServer, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from typer.testing import CliRunner

    from nekoflow.cli import app as cli_app
    from nekoflow.speech.settings import get_speech_settings
    from nekoflow.speech.usage import speech_report

    deps = _deps(engine, server, tmp_path)
    synthesize_turn(deps, _turn(engine, [("a", "こんにちは"), ("b", "またね")]))
    synthesize_turn(deps, _turn(engine, [("a", "こんにちは")]))  # a cache hit: free
    (row,) = speech_report(engine, prices={"openai": 15.0})
    assert (row["provider"], row["lines"], row["synthesized"], row["cached"]) == ("openai", 3, 2, 1)
    assert row["chars"] == 8 and row["hit_rate"] == round(1 / 3, 4)
    assert row["cost"] == pytest.approx(8 * 15.0 / 1_000_000)
    monkeypatch.setattr("nekoflow.usage.cli.get_engine", lambda: engine)
    monkeypatch.setenv("NEKOFLOW_SPEECH_PRICES", '{"openai": 15}')
    get_speech_settings.cache_clear()
    try:
        out = CliRunner().invoke(cli_app, ["usage", "--speech", "--json"])
        table = CliRunner().invoke(cli_app, ["usage", "--speech"], env={"COLUMNS": "200"})
    finally:
        get_speech_settings.cache_clear()
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["chars"] == 8
    assert "openai" in table.output and "33%" in table.output


def test_unused_clips_are_pruned_after_cache_days(
    engine: Engine, server: SpeechServer, tmp_path
) -> None:
    from datetime import timedelta

    from nekoflow.storage.dialogue import utcnow
    from nekoflow.turns.speech_synth import prune_cache

    deps = _deps(engine, server, tmp_path, cache_days=30)
    turn = _turn(engine, [("a", "こんにちは")])
    synthesize_turn(deps, turn)
    key = store.parts_for(engine, turn)[0].clip_key or ""
    assert prune_cache(deps, utcnow() + timedelta(days=29)) == 0
    assert prune_cache(deps, utcnow() + timedelta(days=31)) == 1
    assert store.get_clip(engine, key) is None
    deps.speech = deps.speech.model_copy(update={"cache_days": 0})
    assert prune_cache(deps, utcnow() + timedelta(days=999)) == 0  # 0: kept for ever
