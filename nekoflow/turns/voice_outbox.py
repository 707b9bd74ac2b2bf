"""The voice side of the deliver stage: a reply's voice rows (after its text rows), whether a
voice row can go yet, and the chunk with its audio loaded (audio never rides in the outbox)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy.engine import Engine

from nekoflow.delivery.base import Chunk
from nekoflow.speech import store
from nekoflow.speech.plan import MIME, VoiceStep, voice_step
from nekoflow.speech.settings import SpeechSettings, get_speech_settings
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.voice_plan import planned_parts

log = logging.getLogger(__name__)

#: The outbox kind of a voice chunk.
VOICE = "voice"


def voice_chunks(
    engine: Engine, settings: Any, run: TurnRun, start: int, speech: SpeechSettings | None = None
) -> list[Chunk]:
    """The reply's voice chunks, numbered from ``start`` (after its text chunks)."""
    if speech is None:
        try:
            speech = get_speech_settings()
        except ValidationError as exc:  # the worker's start-up check names the field
            log.error("speech settings invalid (%d error(s)): no voice", exc.error_count())
            return []
    if not speech.enabled:
        return []
    path = str(getattr(settings, "runtime_config_path", "config.ini"))
    return [
        Chunk(index=start + p["part"], kind=VOICE, payload={"type": VOICE, "part": p["part"]})
        for p in planned_parts(engine, speech, run, path)
    ]


def step_of(
    engine: Engine,
    turn_id: str,
    payload: dict[str, Any],
    since: datetime,
    now: datetime,
    speech: SpeechSettings | None = None,
) -> VoiceStep:
    """What the deliver stage does with a pending voice row (see :func:`plan.voice_step`)."""
    speech = speech or get_speech_settings()
    part = _part(engine, turn_id, payload)
    state, reason = (None, None) if part is None else (part.state, part.reason)
    return voice_step(state, reason, since, now, wait_seconds=speech.wait_seconds)


def _part(engine: Engine, turn_id: str, payload: dict[str, Any]) -> Any:
    number = payload.get("part")
    for part in store.parts_for(engine, turn_id):
        if part.part == number:
            return part
    return None


def loaded(engine: Engine, turn_id: str, chunk: Chunk) -> Chunk | None:
    """``chunk`` with its audio (``audio`` bytes, ``format``, ``mime``, ``duration_ms``) or None
    when the clip is gone."""
    part = _part(engine, turn_id, chunk.payload)
    if part is None or part.clip_key is None:
        return None
    clip = store.get_clip(engine, part.clip_key)
    if clip is None:
        return None
    payload = dict(chunk.payload) | {
        "audio": clip.audio,
        "format": clip.fmt,
        "mime": MIME.get(clip.fmt, "application/octet-stream"),
        "duration_ms": clip.duration_ms,
        "clip": clip.key,
    }
    return chunk.model_copy(update={"payload": payload})
