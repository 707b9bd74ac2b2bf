"""The streamed chat-completions call of :class:`~nekoflow.llm.openai_client.OpenAIChatModel`.

Sends ``stream=True`` with ``stream_options={"include_usage": true}`` through the official SDK's
streaming response, reads the server-sent events line by line (:mod:`nekoflow.llm.streaming`
assembles them) and maps every failure to the client's typed errors: an HTTP error status as in
``complete``; a timeout while reading → LLMTimeoutError; a connection cut mid-stream, or a body
that ends before the model finished → LLMConnectionError (both retryable).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import TYPE_CHECKING, Any, Protocol

from nekoflow.llm.base import (
    ChatResult,
    LLMClientError,
    LLMConnectionError,
    LLMError,
    LLMTimeoutError,
)
from nekoflow.llm.openai_parse import parse_chat_completion
from nekoflow.llm.streaming import TokenSink, assemble_lines
from nekoflow.tokens import estimate_tokens

if TYPE_CHECKING:
    import openai


class StreamingModel(Protocol):
    """What a streamed call needs of its client (``OpenAIChatModel``): its settings, its SDK
    client and its error mapping (typed here, so this module never imports the client's)."""

    model: str
    host: str
    timeout: float
    stream_usage_option: bool
    warned_no_usage: bool

    def sdk(self) -> openai.OpenAI:
        """The SDK client."""
        ...

    @staticmethod
    def create_kwargs(params: dict[str, Any]) -> dict[str, Any]:
        """The SDK ``create`` keyword arguments for the request ``params``."""
        ...

    def map_error(self, exc: openai.OpenAIError) -> LLMError:
        """The typed error for an SDK exception."""
        ...

    def reraise(self, exc: LLMError) -> LLMError:
        """``exc`` named after the client (redacted)."""
        ...

    def where(self) -> str:
        """The client's name and URL (for messages)."""
        ...

    def redact(self, text: str) -> str:
        """``text`` without the API key."""
        ...

STREAM_OPTIONS = {"include_usage": True}
"""Asks the server for a last chunk carrying the token usage."""

PER_MESSAGE_TOKENS = 4
"""Tokens a chat template adds around each message (role, separators), for the estimate."""

log = logging.getLogger(__name__)


def stream_completion(
    model: StreamingModel, params: dict[str, Any], on_delta: TokenSink
) -> ChatResult:
    """One streamed call with the checked request ``params``; deltas go to ``on_delta``.

    The usage is asked for (``stream_options.include_usage``); a server that refuses that
    parameter (HTTP 400 naming it) is asked once more without it, and never again by this
    client. A reply without usage gets estimated token counts, marked ``usage_estimated``.
    """
    if model.stream_usage_option:
        try:
            result = _stream_once(model, {**params, "stream_options": STREAM_OPTIONS}, on_delta)
        except LLMClientError as exc:
            if exc.status_code != 400 or "stream_options" not in f"{exc} {exc.detail}":
                raise
            model.stream_usage_option = False
            log.warning(
                "model server %s refused stream_options (HTTP 400): streaming without it, "
                "token usage estimated",
                model.host,
            )
            result = _stream_once(model, params, on_delta)
    else:
        result = _stream_once(model, params, on_delta)
    return with_estimated_usage(model, params, result)


def with_estimated_usage(
    model: StreamingModel, params: dict[str, Any], result: ChatResult
) -> ChatResult:
    """``result``, or when the server reported no usage, with estimated token counts marked
    ``usage_estimated`` (the first time per client, a warning naming the server)."""
    if result.prompt_tokens is not None and result.completion_tokens is not None:
        return result
    if not model.warned_no_usage:
        model.warned_no_usage = True
        log.warning(
            "model server %s reported no token usage: tokens estimated (marked estimated in "
            "`nekoflow usage`)",
            model.host,
        )
    return result.model_copy(
        update={
            "prompt_tokens": result.prompt_tokens
            if result.prompt_tokens is not None
            else estimate_prompt(params.get("messages") or []),
            "completion_tokens": result.completion_tokens
            if result.completion_tokens is not None
            else estimate_tokens(result.text),
            "usage_estimated": True,
        }
    )


def estimate_prompt(messages: list[dict[str, Any]]) -> int:
    """Estimated prompt tokens of ``messages``: their text plus a few per message (roles,
    separators), as chat templates add."""
    total = 0
    for message in messages:
        content = message.get("content")
        total += PER_MESSAGE_TOKENS + estimate_tokens(
            content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        )
    return total


def _stream_once(model: StreamingModel, params: dict[str, Any], on_delta: TokenSink) -> ChatResult:
    client = model.sdk()
    import openai  # loaded by ``_sdk``: for its exception classes

    started = time.perf_counter()
    deadline = started + model.timeout
    body = {**params, "stream": True}
    lib: Any = None
    try:
        kwargs = model.create_kwargs(body)
        with client.chat.completions.with_streaming_response.create(**kwargs) as response:
            http = response.http_response
            lib = _http_library(http)
            if "text/event-stream" not in http.headers.get("content-type", ""):
                payload = http.read()  # the server ignored ``stream``: one JSON completion
                result = parse_chat_completion(
                    payload,
                    default_model=model.model,
                    latency_ms=(time.perf_counter() - started) * 1000.0,
                )
                if result.text:
                    on_delta(result.text)
                return result.model_copy(update={"first_token_ms": result.latency_ms})
            return assemble_lines(
                http.iter_lines(),
                on_delta,
                default_model=model.model,
                started=started,
                deadline=deadline,
            )
    except openai.OpenAIError as exc:
        raise model.map_error(exc) from None
    except LLMError as exc:
        raise model.reraise(exc) from None
    except Exception as exc:
        if lib is None or not isinstance(exc, lib.HTTPError):
            raise
        if isinstance(exc, lib.TimeoutException):
            raise LLMTimeoutError(
                f"{model.where()}: stream stalled for {model.timeout:g} s"
            ) from None
        raise LLMConnectionError(
            f"{model.where()}: stream cut ({type(exc).__name__})",
            detail=model.redact(repr(exc)),
        ) from None


def _http_library(response: object) -> Any:
    """The HTTP library the SDK runs on (``httpx`` or its successor), for its exception classes."""
    name = type(response).__module__.split(".")[0]
    lib = sys.modules.get(name)
    return lib if lib is not None and hasattr(lib, "HTTPError") else None
