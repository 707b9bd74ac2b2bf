"""The speech interface (pure): a provider turns text into audio bytes in a requested format.

Providers raise :class:`SpeechError` with a ``reason`` safe to store (our words, HTTP status
and codes, never the text or the provider's free text); :class:`SpeechTimeout` when the line's
time budget ran out.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from nekoflow.errors import NekoflowError
from nekoflow.speech.plan import AudioFormat
from nekoflow.speech.settings import VoiceProfile


class SpeechError(NekoflowError):
    """A line could not be synthesized; ``reason`` has no text in it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SpeechTimeout(SpeechError):
    """The synthesis did not finish within the line's time budget."""


@runtime_checkable
class Speech(Protocol):
    """A speech provider (OpenAI-compatible, GPT-SoVITS, …)."""

    #: The provider's name as in settings (``openai``, ``gpt_sovits``).
    name: str

    def synthesize(
        self, text: str, profile: VoiceProfile, fmt: AudioFormat, *, budget: float
    ) -> bytes:
        """Audio of ``text`` in ``fmt``, within ``budget`` seconds, or SpeechError."""
        ...
