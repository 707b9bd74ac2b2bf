"""Speech settings (``NEKOFLOW_SPEECH_*``): off by default; providers, voices, budgets, prices."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

ProviderName = Literal["openai", "gpt_sovits"]


class VoiceProfile(BaseModel):
    """One character's voice: which provider speaks it, with which voice, language and speed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: ``openai`` (an OpenAI-compatible ``/v1/audio/speech``) or ``gpt_sovits``; None: the
    #: deployment's ``NEKOFLOW_SPEECH_PROVIDER``.
    provider: ProviderName | None = None
    #: The OpenAI voice name (``alloy``, ``nova``…); for GPT-SoVITS a label of the reference.
    voice: str = Field(default="alloy", min_length=1, max_length=200)
    #: OpenAI-compatible model name; None: ``NEKOFLOW_SPEECH_OPENAI_MODEL``.
    model: str | None = None
    #: GPT-SoVITS: the reference audio's path on the GPT-SoVITS server.
    ref_audio_path: str = ""
    #: GPT-SoVITS: the transcript of the reference audio (what is said in it).
    prompt_text: str = ""
    #: GPT-SoVITS: the reference transcript's language (``ja``, ``zh``, ``en``, ``auto``…).
    prompt_lang: str = "ja"
    #: The spoken text's language (GPT-SoVITS ``text_lang``; informational for OpenAI).
    language: str = "ja"
    #: Speaking speed (OpenAI ``speed`` 0.25–4, GPT-SoVITS ``speed_factor``).
    speed: float = Field(default=1.0, ge=0.25, le=4.0)


class SpeechSettings(BaseSettings):
    """The character's voice; read from ``NEKOFLOW_SPEECH_*`` environment variables."""

    model_config = SettingsConfigDict(
        env_prefix="NEKOFLOW_SPEECH_", env_file=None, extra="ignore", hide_input_in_errors=True
    )

    #: Send each reply's spoken lines as voice messages too (off by default).
    enabled: bool = False
    #: The provider of characters whose voice names none.
    provider: ProviderName = "openai"
    #: Base URL of the OpenAI-compatible API (``…/v1``; ``/audio/speech`` is appended).
    openai_base_url: str = "https://api.openai.com/v1"

    #: Bearer key of the OpenAI-compatible API (none: no Authorization header).
    openai_api_key: SecretStr | None = None

    #: Model of the OpenAI-compatible API when the character's voice names none.
    openai_model: str = "tts-1"
    #: Base URL of the GPT-SoVITS API (``api_v2.py``; ``/tts`` is appended).
    gpt_sovits_url: str = "http://127.0.0.1:9880"
    #: The voice of characters without one of their own.
    default_voice: VoiceProfile = Field(default_factory=VoiceProfile)
    #: Per character (by character name or id): its voice, e.g.
    #: ``{"钦灵": {"provider": "gpt_sovits", "ref_audio_path": "ref/qinling.wav",
    #: "prompt_text": "…", "prompt_lang": "ja", "language": "ja"}}``.
    characters: dict[str, VoiceProfile] = Field(default_factory=dict)
    #: Speak a line's text when it has no spoken part (``<日语配音>``); off: such lines are silent.
    speak_text: bool = False
    #: Seconds one line's synthesis may take (the provider call's timeout); past it the line's
    #: voice is recorded failed and the text stands alone.
    line_budget_seconds: float = Field(default=15.0, gt=0, le=600)
    #: Seconds the delivery waits for a reply's voice (from the start of its delivery) before
    #: it records the voice failed (a lost or stuck synthesis); the conversation's next reply
    #: waits for it.
    wait_seconds: float = Field(default=90.0, gt=0, le=3600)
    #: Lines whose spoken part is longer than this many characters are not voiced.
    max_chars: int = Field(default=400, ge=1, le=5000)
    #: Clips of the cache not used for this many days are deleted by the speech sweeper
    #: (0: kept for ever).
    cache_days: float = Field(default=30.0, ge=0)
    #: Price per million characters synthesized, by provider, e.g. ``{"openai": 15.0}``.
    prices: dict[str, float] = Field(default_factory=dict)

    def profile_for(self, character: str | None, character_id: int | None = None) -> VoiceProfile:
        """The voice of a character (by name, then id), else the default voice."""
        for key in (character, None if character_id is None else str(character_id)):
            if key and key in self.characters:
                return self.characters[key]
        return self.default_voice

    def provider_of(self, profile: VoiceProfile) -> ProviderName:
        """The provider that speaks ``profile``."""
        return profile.provider or self.provider


@lru_cache(maxsize=1)
def get_speech_settings() -> SpeechSettings:
    """This process's speech settings (from the environment, read once)."""
    return SpeechSettings()
