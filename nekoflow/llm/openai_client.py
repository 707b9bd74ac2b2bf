"""``OpenAIChatModel``: the ChatModel over the official ``openai`` SDK, for any compatible server.

Works with OpenAI, DeepSeek, vLLM, Ollama, the llama.cpp server — anything that speaks
``POST {base_url}/chat/completions``. The SDK's own retries are off (the turn pipeline retries with
its own backoff), every SDK failure becomes a typed :class:`~nekoflow.llm.base.LLMError`, and error
messages never contain the API key.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import SecretStr

from nekoflow.errors import ConfigError, InputError
from nekoflow.llm.base import (
    ChatResult,
    LLMBadResponseError,
    LLMClientError,
    LLMConnectionError,
    LLMError,
    LLMTimeoutError,
    Message,
    validate_messages,
)
from nekoflow.llm.openai_parse import (
    MAX_DETAIL_CHARS,
    api_error_code,
    api_error_detail,
    is_quota_error,
    parse_chat_completion,
    parse_retry_after,
    retry_after_from_headers,
    shorten,
    status_error,
)
from nekoflow.llm.streaming import TokenSink

if TYPE_CHECKING:
    import openai

    from nekoflow.settings import Settings

__all__ = [
    "DEFAULT_OPENAI_BASE_URL",
    "MAX_DETAIL_CHARS",
    "NO_KEY_PLACEHOLDER",
    "OpenAIChatModel",
    "parse_chat_completion",
    "parse_retry_after",
    "retry_after_from_headers",
]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Used when no base URL is configured (the SDK's own default, without reading OPENAI_BASE_URL)."""

NO_KEY_PLACEHOLDER = "sk-no-key-required"
"""Bearer token sent when no key is configured: local servers ignore it, the SDK needs one."""


def _safe_url(url: str) -> str:
    """``url`` without any user:password part, for messages."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def _check_base_url(url: str | None, field: str) -> str:
    if url is None:
        return DEFAULT_OPENAI_BASE_URL
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(f"{field}: must be an http(s) URL, got {url!r}", field=field)
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{field}: must be an http(s) URL like http://127.0.0.1:8000/v1, "
            f"got {_safe_url(url)!r}",
            field=field,
        )
    return url


def _check_positive(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(
            f"{field}: must be a positive number of seconds, got {value!r}", field=field
        )
    if not math.isfinite(value):
        raise ConfigError(f"{field}: must be finite, got {value!r}", field=field)
    return float(value)


def _check_temperature(
    value: Any, field: str, error: type[ConfigError | InputError]
) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 2:
        raise error(f"{field}: must be a number in 0–2, got {value!r}", field=field)
    return float(value)


def _check_max_tokens(value: Any, field: str, error: type[ConfigError | InputError]) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise error(f"{field}: must be a positive integer, got {value!r}", field=field)
    return value


# --------------------------------------------------------------------------------------------
# the client
# --------------------------------------------------------------------------------------------


class OpenAIChatModel:
    """A :class:`~nekoflow.llm.base.ChatModel` talking to an OpenAI-compatible chat endpoint.

    ``timeout`` bounds reading, writing and waiting for a pooled connection; ``connect_timeout``
    bounds opening the TCP/TLS connection. With no ``api_key`` a placeholder is sent (local servers
    ignore it); ``OPENAI_API_KEY``/``OPENAI_BASE_URL`` are never read: use ``NEKOFLOW_LLM_*``.
    The underlying SDK client is created lazily and re-created after a fork (Celery prefork).

    Errors: SDK timeout or HTTP 408 → LLMTimeoutError; unreachable → LLMConnectionError;
    429 → LLMRateLimitError with ``retry_after`` (``retry-after-ms``, else ``Retry-After`` seconds
    or HTTP date), except 429 ``insufficient_quota`` → LLMClientError; 5xx → LLMServerError; other
    4xx → LLMClientError; a 2xx that is not a usable completion → LLMBadResponseError.
    :meth:`stream` is the same call streamed (:mod:`nekoflow.llm.openai_stream`).
    """

    def __init__(
        self,
        base_url: str | None,
        model: str,
        api_key: str | SecretStr | None = None,
        timeout: float = 60.0,
        connect_timeout: float = 5.0,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.base_url = _check_base_url(base_url, "base_url")
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(
                f"model: must be a non-empty model name, got {model!r}", field="model"
            )
        self.model = model.strip()
        if isinstance(api_key, SecretStr):
            api_key = api_key.get_secret_value()
        if api_key is not None and not isinstance(api_key, str):
            raise ConfigError("api_key: must be a string", field="api_key")
        self._api_key = SecretStr(api_key.strip()) if api_key and api_key.strip() else None
        self.timeout = _check_positive(timeout, "timeout")
        self.connect_timeout = _check_positive(connect_timeout, "connect_timeout")
        self.temperature = _check_temperature(temperature, "temperature", ConfigError)
        self.max_tokens = _check_max_tokens(max_tokens, "max_tokens", ConfigError)
        self.name = f"openai:{self.model}"
        parts = urlsplit(self.base_url)
        #: the model server's host[:port], named by error reasons (NEKOFLOW_LLM_BASE_URL)
        self.host = (parts.hostname or "?") + (f":{parts.port}" if parts.port else "")
        #: ask streams for their usage (``stream_options``); off once the server refused it
        self.stream_usage_option = True
        self.warned_no_usage = False
        self._client: openai.OpenAI | None = None
        self._client_pid: int | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIChatModel:
        """Build from ``NEKOFLOW_LLM_*`` settings (base URL, model, key, timeouts, defaults)."""
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        return cls(
            base_url=_check_base_url(settings.llm_base_url, "NEKOFLOW_LLM_BASE_URL")
            if settings.llm_base_url is not None
            else None,
            model=settings.llm_model,
            api_key=key,
            timeout=settings.llm_timeout,
            connect_timeout=settings.llm_connect_timeout,
            temperature=settings.llm_temperature,
            max_tokens=settings.llm_max_tokens,
        )

    @property
    def has_api_key(self) -> bool:
        """Whether a real API key (not the placeholder) is configured."""
        return self._api_key is not None

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return (
            f"OpenAIChatModel(base_url={_safe_url(self.base_url)!r}, model={self.model!r}, "
            f"api_key={key}, timeout={self.timeout}, connect_timeout={self.connect_timeout})"
        )

    def sdk(self) -> openai.OpenAI:
        """The SDK client for this process (created on first use, again after a fork). The SDK
        is imported here, not with this module: a process that builds the model but never
        calls it (the ``turns`` worker in rule-review mode) does not pay its 15 MiB."""
        import openai

        with self._lock:
            pid = os.getpid()
            if self._client is None or self._client_pid != pid:
                self._client = openai.OpenAI(
                    base_url=self.base_url,
                    api_key=self._api_key.get_secret_value()
                    if self._api_key
                    else NO_KEY_PLACEHOLDER,
                    max_retries=0,
                    timeout=openai.Timeout(self.timeout, connect=self.connect_timeout),
                )
                self._client_pid = pid
            return self._client

    def close(self) -> None:
        """Close the HTTP connection pool (a later call opens a new one)."""
        with self._lock:
            client, self._client, self._client_pid = self._client, None, None
        if client is not None:
            client.close()

    def __enter__(self) -> OpenAIChatModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def redact(self, text: str) -> str:
        """``text`` with the API key and any URL credentials masked, shortened for messages."""
        if self._api_key:
            text = text.replace(self._api_key.get_secret_value(), "***")
        safe = _safe_url(self.base_url)
        if safe != self.base_url:
            text = text.replace(self.base_url, safe)
        return shorten(text)

    def where(self) -> str:
        return f"{self.name} at {_safe_url(self.base_url)}"

    def map_error(self, exc: openai.OpenAIError) -> LLMError:
        """The typed LLMError for an SDK exception (message redacted, no key)."""
        import openai  # loaded by :meth:`_sdk` already

        where = self.where()
        if isinstance(exc, openai.APITimeoutError):
            if "connect" in type(exc.__cause__).__name__.lower():
                return LLMTimeoutError(
                    f"{where}: could not connect within {self.connect_timeout:g} s"
                )
            return LLMTimeoutError(f"{where}: no answer within {self.timeout:g} s")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            kind = type(cause).__name__ if cause is not None else "connection error"
            detail = self.redact(repr(cause)) if cause is not None else None
            return LLMConnectionError(f"{where}: cannot connect ({kind})", detail=detail)
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = self.redact(api_error_detail(exc.body) or exc.message)
            code = api_error_code(exc.body)
            label = f"HTTP {status}" + (f" {code}" if code else "")
            retry_after = retry_after_from_headers(exc.response.headers) if status == 429 else None
            if status == 429 and is_quota_error(exc.body):
                # OpenAI answers 429 "insufficient_quota" when billing is exhausted: waiting
                # will not help, so this one is not retryable.
                return LLMClientError(
                    f"{where}: HTTP 429 quota exhausted", status_code=429, detail=detail
                )
            hint = f" (retry after {retry_after:g} s)" if retry_after is not None else ""
            return status_error(status, f"{where}: {label}{hint}", retry_after, detail=detail)
        if isinstance(exc, openai.APIResponseValidationError):
            return LLMBadResponseError(
                f"{where}: unusable response", detail=self.redact(exc.message)
            )
        return LLMError(f"{where}: {type(exc).__name__}", detail=self.redact(str(exc)))

    def _params(
        self,
        messages: Sequence[Message],
        temperature: float | None,
        max_tokens: int | None,
        json_mode: bool,
    ) -> dict[str, Any]:
        """The request body of one call (checked input, this client's defaults)."""
        checked = validate_messages(messages)
        temp = _check_temperature(temperature, "temperature", InputError)
        limit = _check_max_tokens(max_tokens, "max_tokens", InputError)
        temp = self.temperature if temp is None else temp
        limit = self.max_tokens if limit is None else limit
        params: dict[str, Any] = {"model": self.model, "messages": checked}
        if temp is not None:
            params["temperature"] = temp
        if limit is not None:
            params["max_tokens"] = limit
        if json_mode:
            params["response_format"] = {"type": "json_object"}
        return params

    @staticmethod
    def create_kwargs(params: dict[str, Any]) -> dict[str, Any]:
        """``create()``'s arguments for a checked body: the whole body rides in ``extra_body``.

        The SDK walks every argument of ``create()`` against its request TypedDicts before
        sending (measured here: 4.7 ms of CPU per call for a 31-message prompt, 0.75 ms with
        the messages in ``extra_body``); even ``model`` alone costs a hash of its ~90-name
        ``Literal`` annotation per call. ``model`` and ``messages`` are passed as the SDK's
        ``omit`` (present, as ``create()`` requires, and skipped by the walk); ``extra_body``
        is merged into the request as it is — the same bytes on the wire.
        """
        import openai  # loaded by ``_sdk`` before any call

        return {"model": openai.omit, "messages": openai.omit, "extra_body": params}

    def stream(
        self,
        messages: Sequence[Message],
        on_delta: TokenSink,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> ChatResult:
        """:meth:`complete`, streamed: each text delta goes to ``on_delta`` as it arrives.

        The same typed errors, plus: a stream cut before the model finished is a retryable
        LLMConnectionError (nothing partial is returned); a server that ignores ``stream`` and
        answers one JSON completion is read as such (its text is one delta).
        """
        from nekoflow.llm.openai_stream import stream_completion

        params = self._params(messages, temperature, max_tokens, json_mode)
        try:
            return stream_completion(self, params, on_delta)
        except LLMError as exc:
            exc.host = self.host  # the reasons that leave the worker name the server
            raise

    def reraise(self, exc: LLMError) -> LLMError:
        """``exc`` with this client's name and URL in front (redacted)."""
        return type(exc)(
            f"{self.where()}: {self.redact(str(exc))}",
            status_code=exc.status_code,
            detail=self.redact(exc.detail) if exc.detail else None,
        )

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> ChatResult:
        """Send one chat-completions request and return the reply; raise a typed LLMError."""
        params = self._params(messages, temperature, max_tokens, json_mode)
        client = self.sdk()
        import openai  # loaded by :meth:`_sdk`: for its exception classes

        started = time.perf_counter()
        try:
            raw = client.chat.completions.with_raw_response.create(**self.create_kwargs(params))
            payload = raw.http_response.content
        except openai.OpenAIError as exc:
            raise self._at_host(self.map_error(exc)) from None
        latency_ms = (time.perf_counter() - started) * 1000.0
        try:
            return parse_chat_completion(payload, default_model=self.model, latency_ms=latency_ms)
        except LLMError as exc:
            raise self._at_host(self.reraise(exc)) from None

    def _at_host(self, exc: LLMError) -> LLMError:
        """``exc`` marked with the model server's host (the reasons that leave name it)."""
        exc.host = self.host
        return exc
