"""Where a turn's voice goes and which parts it has (the shell around :mod:`plan`): read by the
synthesis task (to create the parts) and the deliver stage (to create the voice outbox rows),
so both see the same plan."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine

from nekoflow.channels.config import RuntimeConfig, load_runtime_config
from nekoflow.delivery.registry import plan_delivery
from nekoflow.errors import ConfigError
from nekoflow.speech.plan import (
    formats_for,
    plan_parts,
    voice_allowed,
    voice_mode,
)
from nekoflow.speech.settings import SpeechSettings, VoiceProfile
from nekoflow.speech.store import assistant_lines, role_name
from nekoflow.storage.turns import TurnRun, TurnStatus

_lock = threading.Lock()
_configs: dict[str, tuple[float | None, RuntimeConfig]] = {}


def runtime_config(path: str) -> RuntimeConfig:
    """config.ini at ``path``, re-read when its modification time changes (a broken file keeps
    the last good configuration; none yet: the defaults)."""
    try:
        stamp: float | None = os.stat(path).st_mtime
    except OSError:
        stamp = None
    with _lock:
        cached = _configs.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    try:
        config = load_runtime_config(path, missing_ok=True)
    except ConfigError:
        if cached is not None:
            return cached[1]
        raise
    with _lock:
        _configs[path] = (stamp, config)
    return config


@dataclass(frozen=True)
class Target:
    """Where a turn's voice goes: platform, chat kind and chat id."""

    platform: str
    chat_type: str
    chat_id: str


def target_of(run: TurnRun) -> Target | None:
    """The voice's target: the reply's destination, or the Web session (its result and event
    stream) for a Web turn; None when the reply goes nowhere nekoflow sends."""
    dest = plan_delivery(run)
    if dest is not None:
        return Target(dest.platform, dest.chat_type, dest.chat_id)
    if run.channel == "web":
        conversation = str((run.request or {}).get("conversation_id") or run.scope_id or "")
        return Target("web", "private", conversation)
    return None


@dataclass(frozen=True)
class Voice:
    """The voice a turn is spoken in: its profile, provider and the formats for its target."""

    profile: VoiceProfile
    provider: str
    ask: str
    sent: str


def voice_of(engine: Engine, speech: SpeechSettings, run: TurnRun, platform: str) -> Voice:
    """The character's voice for ``platform``."""
    profile = speech.profile_for(role_name(engine, run.role_id), run.role_id)
    provider = speech.provider_of(profile)
    ask, sent = formats_for(provider, platform)
    return Voice(profile, provider, ask, sent)


def planned_parts(
    engine: Engine, speech: SpeechSettings, run: TurnRun, config_path: str
) -> list[dict[str, Any]]:
    """The voice parts of ``run`` as column values (part, line_id, provider, fmt), or [] when it
    gets no voice (speech off, not a done turn, the channel's or chat's voice option, no
    spoken lines)."""
    if not speech.enabled or run.status != TurnStatus.done:
        return []
    target = target_of(run)
    if target is None:
        return []
    cfg = runtime_config(config_path).channel(run.channel)
    mode = voice_mode(cfg.voice, cfg.voice_chats, target.chat_id)
    if not voice_allowed(mode, target.chat_type):
        return []
    parts = plan_parts(
        assistant_lines(engine, run.turn_id),
        speak_text=speech.speak_text,
        max_chars=speech.max_chars,
    )
    if not parts:
        return []
    voice = voice_of(engine, speech, run, target.platform)
    return [
        {"part": p.part, "line_id": p.line_id, "provider": voice.provider, "fmt": voice.sent}
        for p in parts
    ]
