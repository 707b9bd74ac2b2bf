"""One speech HTTP call under a total time budget (httpx): the shared shell of the providers."""

from __future__ import annotations

import time
from typing import Any

import httpx

from nekoflow.speech.base import SpeechError, SpeechTimeout
from nekoflow.speech.plan import budget_reason

#: Largest clip accepted from a provider (a line is short; more is a misbehaving server).
MAX_AUDIO_BYTES = 20 * 1024 * 1024


def post_audio(
    http: httpx.Client,
    what: str,
    url: str,
    *,
    json_body: dict[str, Any],
    headers: dict[str, str] | None = None,
    budget: float,
) -> bytes:
    """POST ``json_body`` and return the audio body, all within ``budget`` seconds (each
    phase's timeout is what is left; a trickling answer is cut off at the deadline)."""
    deadline = time.monotonic() + budget
    try:
        with http.stream(
            "POST", url, json=json_body, headers=headers or {}, timeout=httpx.Timeout(budget)
        ) as resp:
            status = resp.status_code
            if status >= 400:
                resp.read()
                raise SpeechError(_status_reason(what, status))
            if resp.headers.get("content-type", "").startswith("application/json"):
                raise SpeechError(f"{what}: answered JSON, not audio")
            out = bytearray()
            for piece in resp.iter_bytes():
                out += piece
                if len(out) > MAX_AUDIO_BYTES:
                    raise SpeechError(f"{what}: audio larger than {MAX_AUDIO_BYTES} bytes")
                if time.monotonic() > deadline:
                    raise SpeechTimeout(budget_reason(budget))
    except httpx.TimeoutException:
        raise SpeechTimeout(budget_reason(budget)) from None
    except httpx.HTTPError as exc:
        raise SpeechError(f"{what}: {type(exc).__name__}") from None
    if not out:
        raise SpeechError(f"{what}: empty audio")
    return bytes(out)


def _status_reason(what: str, status: int) -> str:
    if status in (401, 403):
        return f"{what}: HTTP {status} (key refused)"
    if status == 429:
        return f"{what}: HTTP 429 (rate limited)"
    return f"{what}: HTTP {status}"
