"""Streaming chat completions (pure): server-sent-event lines in, deltas and a ChatResult out.

An OpenAI-compatible stream (``stream=True``, ``stream_options={"include_usage": true}``) is a
``text/event-stream`` of ``data: {chat.completion.chunk}`` events ending with ``data: [DONE]``;
the usage arrives in a last chunk with no choices. :class:`SSEDecoder` turns lines into event
payloads, :class:`StreamAssembler` turns payloads into text deltas and, at the end, the same
:class:`~nekoflow.llm.base.ChatResult` a non-streaming call returns. A stream that ends before
the model finished (no ``finish_reason`` and no ``[DONE]``) is a retryable
:class:`~nekoflow.llm.base.LLMConnectionError`: nothing partial is ever returned.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

from nekoflow.llm.base import (
    ChatModel,
    ChatResult,
    LLMBadResponseError,
    LLMConnectionError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
    Message,
)

TokenSink = Callable[[str], None]
"""Receives each text delta of a streamed reply, in order (their concatenation is the reply)."""

DONE = "[DONE]"
"""The payload of the event that ends an OpenAI stream."""


@runtime_checkable
class StreamingChatModel(Protocol):
    """A chat model that can also hand its reply over piece by piece while it is generated."""

    name: str

    def stream(
        self,
        messages: Sequence[Message],
        on_delta: TokenSink,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> ChatResult:
        """Call ``on_delta`` with each text delta, then return the whole reply as ``complete``."""
        ...


def complete_streaming(
    model: ChatModel,
    messages: Sequence[Message],
    on_delta: TokenSink,
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> ChatResult:
    """The reply of ``model``, streamed to ``on_delta`` when the model can stream; a model that
    cannot is asked with ``complete`` and its whole text is handed over as one delta."""
    stream = getattr(model, "stream", None)
    if callable(stream):
        result: ChatResult = stream(
            messages, on_delta, temperature=temperature, max_tokens=max_tokens
        )
        return result
    result = model.complete(messages, temperature=temperature, max_tokens=max_tokens)
    if result.text:
        on_delta(result.text)
    return result


def replay_in_chunks(
    result: ChatResult,
    on_delta: TokenSink,
    *,
    chunk_chars: int = 8,
    delay: float = 0.0,
    started: float | None = None,
) -> ChatResult:
    """Hand ``result.text`` to ``on_delta`` in pieces of ``chunk_chars`` (``delay`` s apart) and
    return ``result`` with its first-token time: how the offline scripted model streams."""
    if chunk_chars <= 0:
        raise ValueError("chunk_chars: must be positive")
    t0 = time.perf_counter() if started is None else started
    first: float | None = None
    text = result.text
    for i in range(0, len(text), chunk_chars):
        if i and delay > 0:
            time.sleep(delay)
        if first is None:
            first = (time.perf_counter() - t0) * 1000.0
        on_delta(text[i : i + chunk_chars])
    total = max(result.latency_ms, (time.perf_counter() - t0) * 1000.0)
    return result.model_copy(update={"first_token_ms": first, "latency_ms": total})


class SSEDecoder:
    """Server-sent-event lines (without their line ends) in, ``(event, data)`` pairs out."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []

    def feed(self, line: str) -> Iterator[tuple[str, str]]:
        """Take one line; yield the event it completes (a blank line ends an event)."""
        if not line:
            if self._data:
                event, data = self._event or "message", "\n".join(self._data)
                self._event, self._data = "", []
                yield event, data
            else:
                self._event = ""
            return
        if line.startswith(":"):  # comment / keep-alive
            return
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value

    def flush(self) -> Iterator[tuple[str, str]]:
        """The event still pending when the body ended without a final blank line."""
        yield from self.feed("")


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value) if value >= 0 else None


def _delta_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        return "".join(texts) if texts else None
    return None


class StreamAssembler:
    """Collects one streamed completion: text deltas, model, finish reason and usage."""

    def __init__(self, default_model: str = "") -> None:
        self.default_model = default_model
        self.parts: list[str] = []
        self.model = ""
        self.finish_reason: str | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.done = False
        self.chunks = 0
        self._has_text = False
        self._refusal: list[str] = []

    def feed(self, event: str, data: str) -> str:
        """Take one event; return the text it adds ("" when none). Raises an ``LLMError`` for
        an error event or a chunk that is not JSON."""
        if data.strip() == DONE:
            self.done = True
            return ""
        try:
            body = json.loads(data)
        except ValueError:
            raise LLMBadResponseError("stream chunk is not JSON", status_code=200) from None
        if not isinstance(body, dict):
            raise LLMBadResponseError("stream chunk is not a JSON object", status_code=200)
        if event == "error" or (body.get("error") is not None and not body.get("choices")):
            err = body.get("error", body)
            code = err.get("code") if isinstance(err, dict) else None
            message = err.get("message") if isinstance(err, dict) else err
            detail = " ".join(str(message).split())[:300]
            kind = err.get("type") if isinstance(err, dict) else None
            if code == 429 or code == "rate_limit_exceeded":
                raise LLMRateLimitError("stream carried a rate-limit error", detail=detail)
            server = isinstance(code, int) and not isinstance(code, bool) and 500 <= code < 600
            if server or kind in ("server_error", "overloaded_error") or code == "server_error":
                raise LLMServerError("stream carried a server error", detail=detail)
            raise LLMBadResponseError("stream carried an error", status_code=200, detail=detail)
        self.chunks += 1
        model = body.get("model")
        if isinstance(model, str) and model and not self.model:
            self.model = model
        usage = body.get("usage")
        if isinstance(usage, dict):
            self.prompt_tokens = _count(usage.get("prompt_tokens"))
            self.completion_tokens = _count(usage.get("completion_tokens"))
        added = ""
        for choice in body.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                text = _delta_text(delta.get("content"))
                if text is not None:
                    self._has_text = True
                    added += text
                refusal = delta.get("refusal")
                if isinstance(refusal, str):
                    self._refusal.append(refusal)
            finish = choice.get("finish_reason")
            if isinstance(finish, str) and finish:
                self.finish_reason = finish
        if added:
            self.parts.append(added)
        return added

    @property
    def complete(self) -> bool:
        """Whether the model finished (a finish reason or ``[DONE]`` was seen)."""
        return self.done or self.finish_reason is not None

    def result(self, *, latency_ms: float, first_token_ms: float | None) -> ChatResult:
        """The whole reply; raises when the stream was cut or carried no text."""
        if not self.complete:
            raise LLMConnectionError(
                f"stream ended before the model finished ({self.chunks} chunks)"
            )
        if not self._has_text:
            why = "refused" if self._refusal else "no text"
            raise LLMBadResponseError(
                f"stream carried no content ({why})",
                status_code=200,
                detail=" ".join("".join(self._refusal).split())[:300] or None,
            )
        return ChatResult(
            text="".join(self.parts),
            model=self.model or self.default_model,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            finish_reason=self.finish_reason,
            latency_ms=max(0.0, latency_ms),
            first_token_ms=first_token_ms,
        )


def assemble_lines(
    lines: Iterator[str] | Sequence[str],
    on_delta: TokenSink,
    *,
    default_model: str = "",
    started: float | None = None,
    deadline: float | None = None,
) -> ChatResult:
    """Read SSE ``lines`` of one completion to its end, handing each delta to ``on_delta``.

    ``started``/``deadline`` are ``time.perf_counter()`` values: the latency is measured from
    ``started`` and passing ``deadline`` between two lines raises a retryable timeout.
    """
    t0 = time.perf_counter() if started is None else started
    decoder = SSEDecoder()
    assembler = StreamAssembler(default_model)
    first: float | None = None

    def take(events: Iterator[tuple[str, str]]) -> None:
        nonlocal first
        for event, data in events:
            added = assembler.feed(event, data)
            if added:
                if first is None:
                    first = (time.perf_counter() - t0) * 1000.0
                on_delta(added)

    remaining = iter(lines)
    for line in remaining:
        take(decoder.feed(line))
        if assembler.done:
            break
        if deadline is not None and time.perf_counter() > deadline:
            raise LLMTimeoutError("stream did not finish in time")
    else:
        take(decoder.flush())
    if assembler.done:  # read the body to its end, so the HTTP connection can be reused
        with contextlib.suppress(Exception):  # the reply is complete whatever happens now
            for _ in remaining:
                pass
    return assembler.result(latency_ms=(time.perf_counter() - t0) * 1000.0, first_token_ms=first)


__all__ = [
    "DONE",
    "SSEDecoder",
    "StreamAssembler",
    "StreamingChatModel",
    "TokenSink",
    "assemble_lines",
    "complete_streaming",
    "replay_in_chunks",
]
