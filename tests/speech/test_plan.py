"""Pure voice decisions: which lines are voiced, channel options, formats, cache keys, budgets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from nekoflow.channels.config import parse_runtime_config
from nekoflow.errors import ConfigError
from nekoflow.speech.plan import (
    LineIn,
    PlannedPart,
    VoiceMode,
    cache_key,
    formats_for,
    plan_parts,
    spoken_text,
    voice_allowed,
    voice_fingerprint,
    voice_mode,
    voice_step,
)
from nekoflow.speech.settings import SpeechSettings, VoiceProfile

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_spoken_part_first_then_text_only_when_chosen() -> None:
    line = LineIn(1, "你好呀", "こんにちは")
    bare = LineIn(2, "你好呀", None)
    assert spoken_text(line, speak_text=False) == "こんにちは"
    assert spoken_text(bare, speak_text=False) is None
    assert spoken_text(bare, speak_text=True) == "你好呀"
    assert spoken_text(LineIn(3, "  ", "  "), speak_text=True) is None


def test_plan_numbers_voiced_lines_and_skips_silent_and_long_ones() -> None:
    lines = [
        LineIn(10, "a", "あ"),
        LineIn(11, "b", None),
        LineIn(12, "c", "x" * 9),
        LineIn(13, "d", "で"),
    ]
    assert plan_parts(lines, speak_text=False, max_chars=8) == [
        PlannedPart(0, 10),
        PlannedPart(1, 13),
    ]
    assert [p.line_id for p in plan_parts(lines, speak_text=True, max_chars=8)] == [10, 11, 13]


@pytest.mark.parametrize(
    ("mode", "chat_type", "allowed"),
    [
        (VoiceMode.on, "group", True),
        (VoiceMode.off, "private", False),
        (VoiceMode.private, "group", False),
        (VoiceMode.private, "private", True),
        (VoiceMode.private, "p2p", True),  # Feishu's one-to-one chat
        (VoiceMode.private, "c2c", True),  # QQ bot's
    ],
)
def test_voice_allowed_by_mode_and_chat_kind(
    mode: VoiceMode, chat_type: str, allowed: bool
) -> None:
    assert voice_allowed(mode, chat_type) is allowed


def test_chat_mode_overrides_channel_mode() -> None:
    chats = {"42": VoiceMode.off}
    assert voice_mode(VoiceMode.on, chats, "42") == VoiceMode.off
    assert voice_mode(VoiceMode.private, chats, "7") == VoiceMode.private
    assert voice_mode(None, {}, "7") == VoiceMode.on


def test_config_ini_voice_options() -> None:
    config = parse_runtime_config(
        "[character_runtime_qq]\nvoice = private\nvoice_chats = 123:off, 456：on\n".replace(
            "：", ":"
        )
    )
    qq = config.channel("qq")
    assert qq.voice == VoiceMode.private
    assert qq.voice_chats == {"123": VoiceMode.off, "456": VoiceMode.on}
    assert config.channel("telegram").voice is None
    with pytest.raises(ConfigError) as bad:
        parse_runtime_config("[character_runtime_qq]\nvoice = loud\n")
    assert bad.value.field == "character_runtime_qq.voice"
    with pytest.raises(ConfigError) as bad_chat:
        parse_runtime_config("[character_runtime_qq]\nvoice_chats = 123\n")
    assert bad_chat.value.field == "character_runtime_qq.voice_chats"


def test_formats_ask_platform_format_and_convert_only_for_qq_bot() -> None:
    assert formats_for("openai", "telegram") == ("ogg_opus", "ogg_opus")
    assert formats_for("openai", "onebot") == ("mp3", "mp3")
    assert formats_for("gpt_sovits", "onebot") == ("wav", "wav")
    assert formats_for("openai", "qqbot") == ("wav", "silk")
    assert formats_for("gpt_sovits", "qqbot") == ("wav", "silk")
    assert formats_for("openai", "feishu") == ("ogg_opus", "ogg_opus")
    assert formats_for("openai", "somewhere") == formats_for("openai", "web")


def test_cache_key_depends_on_provider_voice_format_and_text_only() -> None:
    nova = voice_fingerprint("openai", VoiceProfile(voice="nova"), "tts-1")
    alloy = voice_fingerprint("openai", VoiceProfile(voice="alloy"), "tts-1")
    key = cache_key("openai", nova, "mp3", "こんにちは")
    assert key == cache_key("openai", nova, "mp3", "こんにちは")  # a repeated line: a hit
    others = {
        cache_key("openai", alloy, "mp3", "こんにちは"),
        cache_key("gpt_sovits", nova, "mp3", "こんにちは"),
        cache_key("openai", nova, "ogg_opus", "こんにちは"),
        cache_key("openai", nova, "mp3", "こんばんは"),
    }
    assert key not in others and len(others) == 4
    assert "こんにちは" not in key and len(key) == 64  # no text in keys or URLs
    ref_a = VoiceProfile(provider="gpt_sovits", ref_audio_path="a.wav")
    ref_b = VoiceProfile(provider="gpt_sovits", ref_audio_path="b.wav")
    assert voice_fingerprint("gpt_sovits", ref_a, "") != voice_fingerprint("gpt_sovits", ref_b, "")


def test_voice_step_waits_within_the_budget_then_fails() -> None:
    ready = voice_step("ready", None, T0, T0 + timedelta(seconds=500), wait_seconds=60)
    assert ready.kind == "send"
    failed = voice_step("failed", "openai speech: HTTP 500", T0, T0, wait_seconds=60)
    assert (failed.kind, failed.reason) == ("failed", "voice: openai speech: HTTP 500")
    waiting = voice_step("awaiting", None, T0, T0 + timedelta(seconds=15), wait_seconds=60)
    assert (waiting.kind, waiting.delay) == ("await", 45.0)
    no_part = voice_step(None, None, T0, T0 + timedelta(seconds=10), wait_seconds=60)
    assert no_part.kind == "await"
    late = voice_step(None, None, T0, T0 + timedelta(seconds=60), wait_seconds=60)
    assert (late.kind, late.reason) == ("failed", "voice: not synthesized within 60s")


def test_character_voice_by_name_then_id_then_default() -> None:
    speech = SpeechSettings(
        characters={"钦灵": VoiceProfile(voice="nova"), "7": VoiceProfile(voice="echo")},
        default_voice=VoiceProfile(voice="alloy"),
        provider="gpt_sovits",
    )
    assert speech.profile_for("钦灵", 1).voice == "nova"
    assert speech.profile_for("other", 7).voice == "echo"
    assert speech.profile_for(None, None).voice == "alloy"
    assert speech.provider_of(VoiceProfile()) == "gpt_sovits"
    assert speech.provider_of(VoiceProfile(provider="openai")) == "openai"
    assert SpeechSettings().enabled is False  # off by default


def test_a_lost_synthesis_is_found_after_its_budget() -> None:
    from nekoflow.speech.plan import synthesis_stalled

    two = [T0, T0 + timedelta(seconds=1)]
    # two parts, 2 s each, 5 s grace: moving until 1 + 4 + 5 = 10 s
    assert not synthesis_stalled(two, T0 + timedelta(seconds=10), budget=2.0)
    assert synthesis_stalled(two, T0 + timedelta(seconds=10.5), budget=2.0)
    assert not synthesis_stalled([], T0 + timedelta(days=1), budget=2.0)


def test_bad_speech_settings_name_the_variable(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from nekoflow.speech.settings import get_speech_settings
    from tasks.checks import _check_speech

    monkeypatch.setenv("NEKOFLOW_SPEECH_LINE_BUDGET_SECONDS", "-1")
    get_speech_settings.cache_clear()
    try:
        with pytest.raises(SystemExit) as stop:
            _check_speech()
    finally:
        get_speech_settings.cache_clear()
    assert stop.value.code == 2
    assert "NEKOFLOW_SPEECH_LINE_BUDGET_SECONDS" in capsys.readouterr().err
