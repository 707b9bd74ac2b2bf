"""The ``ChatModel`` interface: OpenAI-format messages in, text (plus usage) out, typed errors.

Every failure is an :class:`LLMError` whose ``retryable`` flag tells the pipeline whether trying
again can help (timeouts, connection failures, 429, 5xx) or not (other 4xx, malformed responses).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from nekoflow.errors import InputError, NekoflowError

Message = Mapping[str, Any]
"""One chat message in OpenAI format: ``{"role": "system"|"user"|"assistant", "content": str}``."""

MESSAGE_ROLES: frozenset[str] = frozenset({"system", "developer", "user", "assistant", "tool"})
"""Roles an OpenAI-format message may carry."""


def content_text(content: Any) -> str:
    """The plain text of a message ``content``: a string, or the text parts of a parts list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if isinstance(part, Mapping) and isinstance(part.get("text"), str):
            parts.append(part["text"])
    return "".join(parts)


def validate_messages(messages: Any) -> list[dict[str, Any]]:
    """Check ``messages`` is a non-empty list of OpenAI-format messages and return plain copies.

    Raises :class:`nekoflow.errors.InputError` naming the bad field (``messages[2].role`` …).
    """
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise InputError(
            f"messages: must be a list of message dicts, got {type(messages).__name__}",
            field="messages",
        )
    if not messages:
        raise InputError("messages: must not be empty", field="messages")
    checked: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(msg, Mapping):
            raise InputError(
                f"{where}: must be a dict with role and content, got {type(msg).__name__}",
                field=where,
            )
        role = msg.get("role")
        if role not in MESSAGE_ROLES:
            raise InputError(
                f"{where}.role: must be one of {', '.join(sorted(MESSAGE_ROLES))}; got {role!r}",
                field=f"{where}.role",
            )
        content = msg.get("content")
        ok = isinstance(content, str) or (
            isinstance(content, list) and all(isinstance(p, Mapping) for p in content)
        )
        if content is None and role == "assistant" and msg.get("tool_calls"):
            ok = True
        if not ok:
            raise InputError(
                f"{where}.content: must be a string or a list of content parts; "
                f"got {type(content).__name__}",
                field=f"{where}.content",
            )
        checked.append(dict(msg))
    return checked


class ChatResult(BaseModel):
    """What a chat model returned for one call: the text and what the server reported about it."""

    text: str
    model: str = ""
    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)
    #: The server reported no usage: the token counts are nekoflow's estimate.
    usage_estimated: bool = False
    finish_reason: str | None = None
    latency_ms: float = Field(default=0.0, ge=0)
    #: Streamed calls: milliseconds from the request to the first text delta (else None).
    first_token_ms: float | None = Field(default=None, ge=0)

    @property
    def total_tokens(self) -> int | None:
        """prompt + completion tokens, when the server reported both."""
        if self.prompt_tokens is None or self.completion_tokens is None:
            return None
        return self.prompt_tokens + self.completion_tokens


class LLMError(NekoflowError):
    """A chat-model call failed; ``retryable`` says whether another attempt may succeed.

    The message (``str(exc)``) is built from our own words, the error class and the HTTP status
    only, so it is safe to show in Flower, logs and ``TurnRun.reason``. What the server said
    (which may quote the prompt: some gateways echo the input) is kept apart in ``detail`` and
    goes only to the opt-in debug log (``NEKOFLOW_DEBUG_LOG``).
    """

    retryable: bool = False
    #: the model server's host[:port] (set by the client that called it; no credentials)
    host: str | None = None

    def __init__(
        self, message: str, *, status_code: int | None = None, detail: str | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.detail = detail


class LLMTimeoutError(LLMError):
    """The server did not answer within the configured timeout."""

    retryable = True


class LLMConnectionError(LLMError):
    """The server could not be reached (refused, reset, DNS)."""

    retryable = True


class LLMRateLimitError(LLMError):
    """HTTP 429: slow down; ``retry_after`` carries the server's hint in seconds when given."""

    retryable = True

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = 429,
        retry_after: float | None = None,
        detail: str | None = None,
    ) -> None:
        super().__init__(message, status_code=status_code, detail=detail)
        self.retry_after = retry_after


class LLMServerError(LLMError):
    """HTTP 5xx from the server."""

    retryable = True


class LLMClientError(LLMError):
    """HTTP 4xx other than 429 (bad key, bad model, bad request): retrying will not help."""

    retryable = False


class LLMBadResponseError(LLMError):
    """The server answered, but not with a usable chat completion."""

    retryable = False


@runtime_checkable
class ChatModel(Protocol):
    """Anything that turns a list of chat messages into a reply."""

    name: str

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> ChatResult:
        """Return the model's reply to ``messages``; raise :class:`LLMError` on failure."""
        ...
