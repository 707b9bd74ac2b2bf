"""Audio conversion where a platform requires it: wav (PCM) → Tencent SILK v3 for QQ's official
bot, with ``silk-python`` (the ``voice`` extra; a maintained binding of Tencent's SILK codec, no
ffmpeg needed). Everything else is asked of the provider in the platform's format directly."""

from __future__ import annotations

import io
import wave
from array import array

from nekoflow.speech.base import SpeechError

#: Sample rates the SILK encoder takes as input.
SILK_RATES = frozenset({8000, 12000, 16000, 24000, 32000, 44100, 48000})


def wav_pcm(data: bytes) -> tuple[bytes, int]:
    """(mono 16-bit PCM, sample rate) of a wav file; SpeechError when it is not one we read."""
    try:
        with wave.open(io.BytesIO(data), "rb") as w:
            channels, width, rate = w.getnchannels(), w.getsampwidth(), w.getframerate()
            frames = w.readframes(w.getnframes())
    except (wave.Error, EOFError) as exc:
        raise SpeechError(f"wav: unreadable ({type(exc).__name__})") from None
    if width != 2:
        raise SpeechError(f"wav: {8 * width}-bit samples (16-bit expected)")
    if channels == 1:
        return frames, rate
    samples = array("h", frames)
    mono = array(
        "h", (sum(samples[i : i + channels]) // channels for i in range(0, len(samples), channels))
    )
    return mono.tobytes(), rate


def wav_duration_ms(data: bytes) -> int:
    """Duration of a wav file in milliseconds (0 when it cannot be read)."""
    try:
        with wave.open(io.BytesIO(data), "rb") as w:
            return int(w.getnframes() * 1000 / max(1, w.getframerate()))
    except (wave.Error, EOFError):
        return 0


def wav_to_silk(data: bytes) -> bytes:
    """SILK v3 (Tencent header) of a wav file."""
    try:
        import pysilk  # silk-python: the optional `voice` extra
    except ImportError:
        raise SpeechError("silk encoder missing: install nekoflow[voice]") from None
    pcm, rate = wav_pcm(data)
    if rate not in SILK_RATES:
        raise SpeechError(f"wav: sample rate {rate} not encodable as silk")
    out = io.BytesIO()
    try:
        pysilk.encode(io.BytesIO(pcm), out, rate, 24000, tencent=True)
    except Exception as exc:  # the codec's own errors
        raise SpeechError(f"silk encoder: {type(exc).__name__}") from None
    return out.getvalue()


def convert(data: bytes, source: str, target: str) -> bytes:
    """``data`` in ``source`` format as ``target`` (identity when equal)."""
    if source == target:
        return data
    if (source, target) == ("wav", "silk"):
        return wav_to_silk(data)
    raise SpeechError(f"no conversion from {source} to {target}")
