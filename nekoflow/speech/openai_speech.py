"""An OpenAI-compatible speech provider: ``POST {base}/audio/speech`` (OpenAI, and the local
servers that speak it) with ``model``, ``input``, ``voice``, ``response_format``, ``speed``."""

from __future__ import annotations

import httpx

from nekoflow.speech.base import SpeechError
from nekoflow.speech.http import post_audio
from nekoflow.speech.plan import AudioFormat
from nekoflow.speech.settings import VoiceProfile

#: Our formats as OpenAI ``response_format`` values (``opus`` is Ogg/Opus).
_RESPONSE_FORMAT: dict[str, str] = {"ogg_opus": "opus", "mp3": "mp3", "wav": "wav"}


class OpenAISpeech:
    """Speech through an OpenAI-compatible ``/v1/audio/speech`` endpoint."""

    name = "openai"

    def __init__(
        self, base_url: str, api_key: str | None, model: str, *, http: httpx.Client | None = None
    ) -> None:
        self.url = base_url.rstrip("/") + "/audio/speech"
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.model = model
        self.http = http or httpx.Client()

    def synthesize(
        self, text: str, profile: VoiceProfile, fmt: AudioFormat, *, budget: float
    ) -> bytes:
        """Audio of ``text`` in ``fmt`` (ogg_opus, mp3 or wav)."""
        response_format = _RESPONSE_FORMAT.get(fmt)
        if response_format is None:
            raise SpeechError(f"openai speech: format {fmt} not offered")
        body = {
            "model": profile.model or self.model,
            "input": text,
            "voice": profile.voice,
            "response_format": response_format,
            "speed": profile.speed,
        }
        return post_audio(
            self.http,
            "openai speech",
            self.url,
            json_body=body,
            headers=self.headers,
            budget=budget,
        )
