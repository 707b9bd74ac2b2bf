"""Hostile webhook bodies shared by the webhook fuzz tests: deep nesting, an oversized body,
NaN, 1e999, lone surrogates and NUL characters, each inside an otherwise plausible event."""

from __future__ import annotations

DEEP = b"[" * 100_000 + b"]" * 100_000
HUGE = b'{"pad": "' + b"x" * (300 * 1024) + b'"}'


def hostile(event_with_text: str) -> dict[str, bytes]:
    """Named hostile bodies; ``event_with_text`` is a JSON event whose text is ``@TEXT@`` and
    whose number field is ``@NUM@`` (raw JSON is substituted, so NaN / 1e999 stay literal)."""

    def event(text: str = "hi", num: str = "1") -> bytes:
        return event_with_text.replace("@TEXT@", text).replace("@NUM@", num).encode()

    return {
        "deep": DEEP,
        "huge": HUGE,
        "nan": event(num="NaN"),
        "infinity": event(num="1e999"),
        "lone-surrogate": event(text="\\ud800 hi"),
        "nul": event(text="a\\u0000b"),
    }


ALLOWED = {200, 204, 400, 413, 422}
"""What a signed hostile body may get: handled, or refused naming the problem — never a 500."""
