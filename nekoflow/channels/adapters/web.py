"""The Web channel: nekoflow's own session protocol (used by the HTTP API) → ChatRequest.

A chat message is ``{"session_id", "message", "user_id"?, "display_name"?, "message_id"?,
"attachments"?, "character_id"?, "character_mode"?, "metadata"?}`` (``content`` is accepted for
``message``); an event with a ``type`` other than ``message`` (``ping``, ``typing``…) gives None.
Every web session is a one-to-one chat: scene ``web_session``, conversation = session, memory scope
``conversation``; ``character_id`` picks the character for that message.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from nekoflow.channels.adapters._fields import Fields
from nekoflow.channels.adapters.base import BaseChannelAdapter
from nekoflow.channels.context import (
    Attachment,
    ChannelRenderPolicy,
    ChannelRuntimeContext,
    ChatRequest,
    MemoryScope,
)
from nekoflow.channels.errors import MalformedEventError


class WebChatEvent(BaseModel):
    """One message of the web session protocol (unknown extra keys are ignored)."""

    model_config = ConfigDict(
        extra="ignore", coerce_numbers_to_str=True, str_strip_whitespace=False
    )

    type: str = "message"
    session_id: str = Field(min_length=1)
    message: str = Field(default="", validation_alias=AliasChoices("message", "content"))
    user_id: str = ""
    display_name: str = ""
    message_id: str = ""
    attachments: list[Attachment] = Field(default_factory=list)
    character_id: str | None = None
    character_mode: bool | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("session_id")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class WebChannelAdapter(BaseChannelAdapter):
    """The browser/HTTP channel: streaming, Markdown, images and files, no length limit."""

    channel_name: ClassVar[str] = "web"
    render_policy: ClassVar[ChannelRenderPolicy] = ChannelRenderPolicy(
        supports_stream=True,
        supports_markdown=True,
        supports_image=True,
        supports_file=True,
        supports_quote_reply=True,
        supports_at=False,
        max_text_length=None,
        split_strategy="paragraph",
    )

    def _parse(self, event: Fields) -> ChatRequest | None:
        kind = event.raw("type")
        if kind is not None and kind != "message":
            if not isinstance(kind, str):
                raise event.error("type", f"must be a string, got {type(kind).__name__}")
            return None
        try:
            parsed = WebChatEvent.model_validate(dict(event.data))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "event"
            raise MalformedEventError(self.channel_name, field, first["msg"].lower()) from exc
        metadata = dict(parsed.metadata)
        if parsed.character_id:
            metadata["character_id"] = parsed.character_id
        request = self._request(
            conversation_id=parsed.session_id,
            scene="web_session",
            user_id=parsed.user_id,
            content=parsed.message,
            message_id=parsed.message_id,
            display_name=parsed.display_name,
            attachments=parsed.attachments,
            is_mentioned=False,
            is_reply_to_bot=False,
            metadata=metadata,
        )
        if parsed.character_mode is not None:
            request.character_mode = parsed.character_mode
            request.metadata["character_mode"] = parsed.character_mode
        return request

    def build_runtime_context(self, chat_request: Any) -> ChannelRuntimeContext:
        """The runtime context; web requests are always scene ``web_session``."""
        context = super().build_runtime_context(chat_request)
        context.scene = "web_session"
        return context

    def resolve_memory_scope(self, context: ChannelRuntimeContext) -> str:
        """Web memory is per conversation (session)."""
        return MemoryScope.conversation.value
