"""LLM clients: the ChatModel interface, an OpenAI-compatible client and a scripted model.

``OpenAIChatModel`` and its helpers are loaded on first access so that importing ``nekoflow.llm``
(e.g. for the scripted model) does not pay for importing the ``openai`` SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nekoflow.llm.base import (
    MESSAGE_ROLES,
    ChatModel,
    ChatResult,
    LLMBadResponseError,
    LLMClientError,
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
    Message,
    content_text,
    validate_messages,
)
from nekoflow.llm.factory import make_chat_model
from nekoflow.llm.scripted import SCRIPTED_MODEL_NAME, ScriptedChatModel, format_segment
from nekoflow.llm.streaming import StreamingChatModel, TokenSink, complete_streaming

if TYPE_CHECKING:
    from nekoflow.llm.openai_client import (
        DEFAULT_OPENAI_BASE_URL,
        OpenAIChatModel,
        parse_chat_completion,
        parse_retry_after,
        retry_after_from_headers,
    )

_LAZY = frozenset(
    {
        "DEFAULT_OPENAI_BASE_URL",
        "OpenAIChatModel",
        "parse_chat_completion",
        "parse_retry_after",
        "retry_after_from_headers",
    }
)

__all__ = [
    "DEFAULT_OPENAI_BASE_URL",
    "MESSAGE_ROLES",
    "SCRIPTED_MODEL_NAME",
    "ChatModel",
    "ChatResult",
    "LLMBadResponseError",
    "LLMClientError",
    "LLMConnectionError",
    "LLMError",
    "LLMRateLimitError",
    "LLMServerError",
    "LLMTimeoutError",
    "Message",
    "OpenAIChatModel",
    "ScriptedChatModel",
    "StreamingChatModel",
    "TokenSink",
    "complete_streaming",
    "content_text",
    "format_segment",
    "make_chat_model",
    "parse_chat_completion",
    "parse_retry_after",
    "retry_after_from_headers",
    "validate_messages",
]


def __getattr__(name: str) -> Any:
    """Load the OpenAI client's names on first access."""
    if name in _LAZY:
        from nekoflow.llm import openai_client

        value = getattr(openai_client, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'nekoflow.llm' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY)
