"""A GPT-SoVITS speech provider (``api_v2.py``): ``POST {url}/tts`` with the text, its
language, the character's reference audio and transcript, ``media_type`` and speed."""

from __future__ import annotations

import httpx

from nekoflow.speech.base import SpeechError
from nekoflow.speech.http import post_audio
from nekoflow.speech.plan import AudioFormat
from nekoflow.speech.settings import VoiceProfile

#: Our formats as GPT-SoVITS ``media_type`` values.
_MEDIA_TYPE: dict[str, str] = {"wav": "wav", "ogg": "ogg"}


class GPTSoVITSSpeech:
    """Speech through a GPT-SoVITS HTTP API."""

    name = "gpt_sovits"

    def __init__(self, base_url: str, *, http: httpx.Client | None = None) -> None:
        self.url = base_url.rstrip("/") + "/tts"
        self.http = http or httpx.Client()

    def synthesize(
        self, text: str, profile: VoiceProfile, fmt: AudioFormat, *, budget: float
    ) -> bytes:
        """Audio of ``text`` in ``fmt`` (wav or ogg) in the character's reference voice."""
        media_type = _MEDIA_TYPE.get(fmt)
        if media_type is None:
            raise SpeechError(f"gpt-sovits: format {fmt} not offered")
        if not profile.ref_audio_path:
            raise SpeechError("gpt-sovits: the character's voice has no ref_audio_path")
        body = {
            "text": text,
            "text_lang": profile.language,
            "ref_audio_path": profile.ref_audio_path,
            "prompt_text": profile.prompt_text,
            "prompt_lang": profile.prompt_lang,
            "media_type": media_type,
            "streaming_mode": False,
            "speed_factor": profile.speed,
        }
        return post_audio(self.http, "gpt-sovits", self.url, json_body=body, budget=budget)
