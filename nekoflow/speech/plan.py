"""Pure voice decisions: which lines of a reply are voiced, in which audio format, under which
cache key, whether a channel and chat get voice, and what the delivery does with a voice part.

No Celery, Redis, SQL or httpx here: the shells (:mod:`nekoflow.speech.store`,
:mod:`nekoflow.turns.speech_synth`, the deliver stage) load, call these, and store.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Literal

from nekoflow.speech.settings import ProviderName, VoiceProfile

#: Chat kinds that count as private (one person and the bot) across platforms.
PRIVATE_CHATS = frozenset({"private", "p2p", "c2c", "direct", "dm"})


class VoiceMode(StrEnum):
    """A channel's (or chat's) voice option in config.ini: ``voice = on | off | private``."""

    on = "on"
    off = "off"
    private = "private"


def voice_mode(
    channel_mode: VoiceMode | None, chat_modes: Mapping[str, VoiceMode], chat_id: str
) -> VoiceMode:
    """The mode of one chat: its own (``voice_chats``), else the channel's, else ``on``."""
    return chat_modes.get(chat_id) or channel_mode or VoiceMode.on


def voice_allowed(mode: VoiceMode, chat_type: str) -> bool:
    """True when a reply in a chat of ``chat_type`` may be voiced under ``mode``."""
    if mode == VoiceMode.off:
        return False
    if mode == VoiceMode.private:
        return chat_type.strip().lower() in PRIVATE_CHATS
    return True


@dataclass(frozen=True)
class LineIn:
    """What the plan needs of one assistant line: its id, text and spoken part."""

    line_id: int
    content: str
    tts: str | None


@dataclass(frozen=True)
class PlannedPart:
    """One voice part of a reply: the ``part``-th voiced line."""

    part: int
    line_id: int


def spoken_text(line: LineIn, *, speak_text: bool) -> str | None:
    """What is spoken for ``line``: its spoken part, else its text when the operator chose
    "speak the text", else None (the line is silent)."""
    tts = (line.tts or "").strip()
    if tts:
        return tts
    if speak_text:
        return line.content.strip() or None
    return None


def plan_parts(lines: Sequence[LineIn], *, speak_text: bool, max_chars: int) -> list[PlannedPart]:
    """The voice parts of a reply, in line order: lines with something to speak that is at most
    ``max_chars`` long."""
    parts: list[PlannedPart] = []
    for line in lines:
        text = spoken_text(line, speak_text=speak_text)
        if text is None or len(text) > max_chars:
            continue
        parts.append(PlannedPart(part=len(parts), line_id=line.line_id))
    return parts


# --- audio formats -------------------------------------------------------------------------

#: Formats of clips as stored: ``ogg_opus`` (Ogg/Opus), ``ogg`` (Ogg as GPT-SoVITS writes it),
#: ``mp3``, ``wav`` and ``silk`` (Tencent SILK v3, made from wav by the ``voice`` extra).
AudioFormat = Literal["ogg_opus", "ogg", "mp3", "wav", "silk"]

#: What each platform takes, per provider: (format asked of the provider, format sent).
#: Telegram sendVoice and Feishu audio want Ogg/Opus; QQ's official bot wants SILK (made from
#: wav); OneBot implementations transcode mp3/wav themselves; browsers play mp3 and wav.
_FORMATS: dict[str, dict[str, tuple[AudioFormat, AudioFormat]]] = {
    "openai": {
        "telegram": ("ogg_opus", "ogg_opus"),
        "feishu": ("ogg_opus", "ogg_opus"),
        "qqbot": ("wav", "silk"),
        "onebot": ("mp3", "mp3"),
        "web": ("mp3", "mp3"),
    },
    "gpt_sovits": {
        "telegram": ("ogg", "ogg"),
        "feishu": ("ogg", "ogg"),
        "qqbot": ("wav", "silk"),
        "onebot": ("wav", "wav"),
        "web": ("wav", "wav"),
    },
}

#: MIME type of each stored format (the Web route and uploads).
MIME: dict[str, str] = {
    "ogg_opus": "audio/ogg",
    "ogg": "audio/ogg",
    "mp3": "audio/mpeg",
    "wav": "audio/wav",
    "silk": "audio/silk",
}


def formats_for(provider: ProviderName, platform: str) -> tuple[AudioFormat, AudioFormat]:
    """(format asked of ``provider``, format sent) of a clip for ``platform`` (web's for an
    unknown platform)."""
    table = _FORMATS[provider]
    return table.get(platform, table["web"])


def voice_fingerprint(provider: ProviderName, profile: VoiceProfile, model: str) -> str:
    """What makes two clips of one text sound different under ``provider``."""
    if provider == "openai":
        fields: list[object] = [profile.model or model, profile.voice, profile.speed]
    else:
        fields = [
            profile.ref_audio_path,
            profile.prompt_text,
            profile.prompt_lang,
            profile.language,
            profile.speed,
        ]
    return json.dumps(fields, ensure_ascii=False)


def cache_key(provider: str, voice: str, fmt: str, text: str) -> str:
    """The clip cache key of ``text`` spoken by ``voice`` of ``provider`` in ``fmt`` (a hash:
    no text in keys, URLs or logs)."""
    raw = json.dumps([provider, voice, fmt, text], ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


# --- synthesis and delivery of a part ------------------------------------------------------


class PartState(StrEnum):
    """Lifecycle of one voice part: ``awaiting`` synthesis, then ``ready`` or ``failed``."""

    awaiting = "awaiting"
    ready = "ready"
    failed = "failed"


@dataclass(frozen=True)
class VoiceStep:
    """What the deliver stage does with a voice row: wait for its synthesis, send, or record
    it failed with ``reason`` (no text)."""

    kind: Literal["await", "send", "failed"]
    delay: float = 0.0
    reason: str = ""


def voice_step(
    state: str | None,
    reason: str | None,
    since: datetime,
    now: datetime,
    *,
    wait_seconds: float,
) -> VoiceStep:
    """The step for a voice row whose part is in ``state`` (None: no part row yet), its outbox
    row made at ``since``: ready → send; failed → failed with the part's reason; otherwise wait,
    up to ``wait_seconds`` after ``since``, then failed."""
    if state == PartState.ready:
        return VoiceStep("send")
    if state == PartState.failed:
        return VoiceStep("failed", reason=f"voice: {reason or 'synthesis failed'}")
    left = (since + timedelta(seconds=wait_seconds) - now).total_seconds()
    if left <= 0:
        return VoiceStep("failed", reason=f"voice: not synthesized within {wait_seconds:g}s")
    return VoiceStep("await", delay=left)


def budget_reason(budget: float) -> str:
    """The stored reason of a line whose synthesis overran its time budget."""
    return f"synthesis exceeded its {budget:g}s budget"


def synthesis_stalled(
    updated: Sequence[datetime], now: datetime, *, budget: float, grace: float = 5.0
) -> bool:
    """True when a turn's awaiting parts (their last update times) have not moved for longer
    than their synthesis can take (``budget`` per part, plus ``grace``): its task was lost (a
    worker killed mid-synthesis) and is published again."""
    if not updated:
        return False
    return max(updated) < now - timedelta(seconds=budget * len(updated) + grace)
