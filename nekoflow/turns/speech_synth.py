"""The synthesis stage in plain Python: voice a finished turn's parts, each within its time
budget, through the clip cache; the Celery task (``nekoflow.worker.speech``) runs it on the
``speech`` queue and then publishes the turn's delivery.

Idempotent: a part is settled once (``ready`` or ``failed``); a redelivered task re-synthesizes
only parts still ``awaiting`` (their clip is often cached by then). Sending is not done here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine

from nekoflow.speech import store
from nekoflow.speech.base import Speech, SpeechError
from nekoflow.speech.convert import convert, wav_duration_ms
from nekoflow.speech.plan import (
    PartState,
    cache_key,
    spoken_text,
    synthesis_stalled,
    voice_fingerprint,
)
from nekoflow.speech.settings import SpeechSettings, get_speech_settings
from nekoflow.storage.dialogue import utcnow
from nekoflow.turns import store as turn_store
from nekoflow.turns.voice_plan import planned_parts, target_of, voice_of

log = logging.getLogger(__name__)


def make_provider(name: str, speech: SpeechSettings) -> Speech:
    """The provider called ``name`` as the settings describe it."""
    if name == "gpt_sovits":
        from nekoflow.speech.gpt_sovits import GPTSoVITSSpeech

        return GPTSoVITSSpeech(speech.gpt_sovits_url)
    from nekoflow.speech.openai_speech import OpenAISpeech

    key = speech.openai_api_key.get_secret_value() if speech.openai_api_key else None
    return OpenAISpeech(speech.openai_base_url, key, speech.openai_model)


@dataclass
class SpeechDeps:
    """What the synthesis stage needs: storage, settings, config.ini's path, the providers."""

    engine: Engine
    config_path: str
    speech: SpeechSettings = field(default_factory=get_speech_settings)
    providers: dict[str, Speech] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic

    def provider(self, name: str) -> Speech:
        """The (cached) provider ``name``."""
        if name not in self.providers:
            self.providers[name] = make_provider(name, self.speech)
        return self.providers[name]


@dataclass(frozen=True)
class SynthOutcome:
    """What a synthesis run did: parts made ready (from the cache or synthesized), failed."""

    parts: int = 0
    synthesized: int = 0
    cached: int = 0
    failed: int = 0
    reasons: tuple[str, ...] = ()


def synthesize_turn(deps: SpeechDeps, turn_id: str) -> SynthOutcome:
    """Voice the turn's awaiting parts (creating them on first run)."""
    run = turn_store.get_run(deps.engine, turn_id)
    if run is None:
        return SynthOutcome()
    parts = store.ensure_parts(
        deps.engine, turn_id, planned_parts(deps.engine, deps.speech, run, deps.config_path)
    )
    target = target_of(run)
    if not parts or target is None:
        return SynthOutcome(parts=len(parts))
    voice = voice_of(deps.engine, deps.speech, run, target.platform)
    made = cached = failed = 0
    reasons: list[str] = []
    for part in parts:
        if part.state != PartState.awaiting or part.id is None:
            continue
        result = _voice_part(deps, part.line_id, voice)
        if result.get("state") == PartState.failed:
            failed += 1
            reasons.append(str(result.get("reason")))
        elif result.get("cached"):
            cached += 1
        else:
            made += 1
        state = PartState(result.pop("state"))
        store.settle_part(deps.engine, part.id, state, **result)
    return SynthOutcome(len(parts), made, cached, failed, tuple(reasons))


def _voice_part(deps: SpeechDeps, line_id: int | None, voice: Any) -> dict[str, Any]:
    """Column values settling one part: ready with its clip, or failed with a reason."""
    line = store.line_text(deps.engine, line_id) if line_id is not None else None
    text = spoken_text(line, speak_text=deps.speech.speak_text) if line is not None else None
    if text is None:
        return {"state": PartState.failed, "reason": "line gone or has nothing to speak"}
    fingerprint = voice_fingerprint(voice.provider, voice.profile, deps.speech.openai_model)
    key = cache_key(voice.provider, fingerprint, voice.sent, text)
    if store.get_clip(deps.engine, key) is not None:
        store.touch_clip(deps.engine, key)
        return {"state": PartState.ready, "clip_key": key, "chars": len(text), "cached": True}
    budget = deps.speech.line_budget_seconds
    started = deps.clock()
    try:
        audio = deps.provider(voice.provider).synthesize(
            text, voice.profile, voice.ask, budget=budget
        )
        audio_out = convert(audio, voice.ask, voice.sent)
    except SpeechError as exc:
        return {"state": PartState.failed, "reason": exc.reason, "chars": len(text)}
    except Exception as exc:  # a provider bug or a library error: named by class, no text
        log.warning("speech: unexpected %s", type(exc).__name__)
        return {"state": PartState.failed, "reason": f"unexpected {type(exc).__name__}"}
    elapsed = int((deps.clock() - started) * 1000)
    duration = wav_duration_ms(audio) if voice.ask == "wav" else 0
    store.put_clip(deps.engine, key, voice.sent, audio_out, duration)
    return {"state": PartState.ready, "clip_key": key, "chars": len(text), "synth_ms": elapsed}


def prune_cache(deps: SpeechDeps, now: datetime | None = None) -> int:
    """Delete the clips unused for ``cache_days`` (none when it is 0); how many went."""
    if deps.speech.cache_days <= 0:
        return 0
    since = (now or utcnow()) - timedelta(days=deps.speech.cache_days)
    return store.prune_clips(deps.engine, since)


def stalled_turns(deps: SpeechDeps, now: datetime | None = None) -> list[str]:
    """Turns whose synthesis was lost (see :func:`plan.synthesis_stalled`), touched so that
    the next sweep waits again; the caller publishes their synthesis."""
    now = now or utcnow()
    found = store.awaiting_parts(deps.engine, now - timedelta(days=1))
    budget = deps.speech.line_budget_seconds
    stalled = [t for t, times in found.items() if synthesis_stalled(times, now, budget=budget)]
    for turn_id in stalled:
        store.touch_parts(deps.engine, turn_id)
    return stalled
