"""Pure helpers of the OpenAI-compatible client: Retry-After, response bodies, error bodies.

No SDK import: what a chat-completions server answered (JSON body, headers) in, a
:class:`~nekoflow.llm.base.ChatResult` or a typed :class:`~nekoflow.llm.base.LLMError` out.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from nekoflow.llm.base import (
    ChatResult,
    LLMBadResponseError,
    LLMClientError,
    LLMError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
)

MAX_DETAIL_CHARS = 300
"""Server error details are cut to this length in exception messages."""


# --------------------------------------------------------------------------------------------
# pure helpers: Retry-After, response parsing
# --------------------------------------------------------------------------------------------


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delay-seconds or HTTP date); None if unusable.

    A date in the past gives 0.0; negative, non-finite or unparseable values give None.
    """
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:  # pragma: no cover - older Pythons returned None instead of raising
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    if current.tzinfo is None:
        current = current.replace(tzinfo=UTC)
    return max(0.0, (when - current).total_seconds())


def retry_after_from_headers(headers: Mapping[str, str]) -> float | None:
    """The server's back-off hint: ``retry-after-ms`` (OpenAI) first, then ``Retry-After``."""
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            ms = float(millis)
        except ValueError:
            ms = -1.0
        if math.isfinite(ms) and ms >= 0:
            return ms / 1000.0
    return parse_retry_after(lowered.get("retry-after"))


def _count(value: Any) -> int | None:
    """A token count from a usage field, or None when absent or not a non-negative integer."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


def _message_text(content: Any) -> str | None:
    """The reply text of a response message's ``content`` (string or text parts), else None."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        texts = [
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        if texts:
            return "".join(texts)
    return None


def status_error(
    status: int, message: str, retry_after: float | None = None, *, detail: str | None = None
) -> LLMError:
    """The typed error for an HTTP error status (``detail``: the server's words, kept apart)."""
    if status == 429:
        return LLMRateLimitError(
            message, status_code=status, retry_after=retry_after, detail=detail
        )
    if status == 408:
        return LLMTimeoutError(message, status_code=status, detail=detail)
    if status >= 500:
        return LLMServerError(message, status_code=status, detail=detail)
    if 400 <= status < 500:
        return LLMClientError(message, status_code=status, detail=detail)
    return LLMBadResponseError(message, status_code=status, detail=detail)


def parse_chat_completion(
    payload: str | bytes, *, default_model: str = "", latency_ms: float = 0.0
) -> ChatResult:
    """Turn a chat-completions response body into a :class:`ChatResult`.

    Raises :class:`LLMBadResponseError` when the body is not a usable completion (not JSON, no
    choices, null or non-text content). A 200 carrying an ``{"error": {...}}`` object (some proxies
    do this) is mapped like the HTTP status in its ``code`` when that is one, else a bad response.
    Content given as a list of text parts is joined; usage fields that are absent or not
    non-negative integers become None.
    """
    try:
        body = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        raise LLMBadResponseError(f"response body is not JSON ({exc})", status_code=200) from None
    if not isinstance(body, dict):
        raise LLMBadResponseError(
            f"response body is a JSON {type(body).__name__}, not an object", status_code=200
        )
    choices = body.get("choices")
    if not choices and body.get("error") is not None:
        err = body["error"]
        detail = err.get("message") if isinstance(err, dict) else err
        code = err.get("code") if isinstance(err, dict) else None
        said = shorten(str(detail))
        if isinstance(code, int) and not isinstance(code, bool) and 400 <= code < 600:
            raise status_error(code, f"server returned an error object ({code})", detail=said)
        raise LLMBadResponseError("server returned an error object", status_code=200, detail=said)
    if not isinstance(choices, list) or not choices:
        raise LLMBadResponseError("response has no choices", status_code=200)
    choice = choices[0]
    if not isinstance(choice, dict):
        raise LLMBadResponseError("choices[0] is not an object", status_code=200)
    message = choice.get("message")
    if isinstance(message, dict):
        text = _message_text(message.get("content"))
        if text is None:
            refusal = message.get("refusal")
            why = "refused" if isinstance(refusal, str) else "no text"
            raise LLMBadResponseError(
                f"choices[0].message.content is {type(message.get('content')).__name__} ({why})",
                status_code=200,
                detail=shorten(refusal) if isinstance(refusal, str) else None,
            )
    elif isinstance(choice.get("text"), str):  # legacy completions shape from some servers
        text = choice["text"]
    else:
        raise LLMBadResponseError("choices[0] has no message object", status_code=200)
    finish = choice.get("finish_reason")
    model = body.get("model")
    usage = body.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return ChatResult(
        text=text,
        model=model if isinstance(model, str) and model else default_model,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        finish_reason=finish if isinstance(finish, str) else None,
        latency_ms=max(0.0, latency_ms),
    )


def shorten(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_quota_error(body: object) -> bool:
    """Whether an error body says the account's quota is exhausted (OpenAI's 429 variant)."""
    err = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return False
    return "insufficient_quota" in (err.get("code"), err.get("type"))


_CODE_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{0,63}")


def api_error_code(body: object) -> str | None:
    """The error object's machine-readable ``code`` or ``type`` when it is an identifier (never
    free text, which may quote the input)."""
    err = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return None
    for key in ("code", "type"):
        value = err.get(key)
        if isinstance(value, str) and _CODE_RE.fullmatch(value):
            return value
    return None


def api_error_detail(body: object) -> str | None:
    """The human message in an error body (``{"error": {"message": …}}`` and variants)."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail")
            if isinstance(msg, str):
                return msg
        elif isinstance(err, str):
            return err
        detail = body.get("detail") or body.get("message")
        if isinstance(detail, str):
            return detail
        return json.dumps(body, ensure_ascii=False, default=str)
    if isinstance(body, str):
        return body
    return None
