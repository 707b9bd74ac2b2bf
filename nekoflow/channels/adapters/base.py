"""Shared adapter behaviour: runtime context, render policy, memory scope and rendering.

A platform adapter subclasses :class:`BaseChannelAdapter`, sets ``channel_name`` and
``render_policy`` and implements ``_parse`` (raw event → ChatRequest or None).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import ValidationError

from nekoflow.channels.adapters._fields import Fields, load_event
from nekoflow.channels.context import (
    Attachment,
    ChannelRenderPolicy,
    ChannelRuntimeContext,
    ChatRequest,
    ChatSender,
    MemoryScope,
    context_from_request,
    request_field,
)
from nekoflow.channels.errors import MalformedEventError
from nekoflow.channels.render import render_text
from nekoflow.channels.sanitize import clean


def _first_text(meta: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = meta.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return ""


class BaseChannelAdapter:
    """The five seed protocol methods plus ``parse_event``, shared by every platform adapter."""

    channel_name: ClassVar[str] = ""
    render_policy: ClassVar[ChannelRenderPolicy] = ChannelRenderPolicy()
    group_memory_scope: ClassVar[str] = MemoryScope.group.value
    #: Metadata keys holding the platform's chat type, and the chat types that are private chats.
    chat_type_keys: ClassVar[tuple[str, ...]] = ("chat_type",)
    private_chat_types: ClassVar[frozenset[str]] = frozenset({"private"})
    #: Metadata keys holding the chat id, used as the group id of a group chat lacking one.
    chat_id_keys: ClassVar[tuple[str, ...]] = ("chat_id",)

    # --- input ---------------------------------------------------------------------------

    def parse_event(self, raw_event: Any) -> ChatRequest | None:
        """Parse a raw platform event (dict, or JSON str/bytes) into a ChatRequest.

        Returns None for events that are not chat messages (notices, heartbeats, the bot's own
        messages). Every string of the request is cleaned (``nekoflow.channels.sanitize``);
        raises :class:`MalformedEventError` (an ``InputError``) naming the bad field.
        """
        event = Fields(self.channel_name, load_event(self.channel_name, raw_event))
        try:
            request = self._parse(event)
        except ValidationError as exc:  # a value that passed the reads but not the model
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "event"
            raise MalformedEventError(self.channel_name, field, first["msg"]) from exc
        if request is None:
            return None
        # every string of the request (text, names, ids, metadata) made storable: no NUL or
        # other C0 control, no lone surrogate (see nekoflow.channels.sanitize)
        return ChatRequest.model_validate(clean(request.model_dump()))

    def _parse(self, event: Fields) -> ChatRequest | None:
        raise NotImplementedError

    def _request(
        self,
        *,
        conversation_id: str,
        scene: str,
        user_id: str,
        content: str,
        message_id: str = "",
        display_name: str = "",
        role: str | None = None,
        group_id: str = "",
        group_name: str = "",
        thread_id: str = "",
        attachments: list[Attachment] | None = None,
        is_mentioned: bool = False,
        is_reply_to_bot: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> ChatRequest:
        """A ChatRequest whose trigger flags are mirrored into metadata (seed convention)."""
        meta: dict[str, Any] = dict(metadata or {})
        meta.update(
            source=self.channel_name,
            channel_type=scene,
            is_mentioned=is_mentioned,
            is_reply_to_bot=is_reply_to_bot,
        )
        if group_id:
            meta["group_id"] = group_id
        return ChatRequest(
            channel=self.channel_name,
            conversation_id=conversation_id,
            user_id=user_id,
            sender=ChatSender(user_id=user_id, display_name=display_name, role=role),
            content=content.strip(),
            message_id=message_id,
            attachments=attachments or [],
            is_mentioned=is_mentioned,
            is_reply_to_bot=is_reply_to_bot,
            scene=scene,
            group_id=group_id,
            group_name=group_name,
            thread_id=thread_id,
            metadata=meta,
        )

    # --- CharacterChannelAdapter ---------------------------------------------------------

    def build_runtime_context(self, chat_request: Any) -> ChannelRuntimeContext:
        """The runtime context of a request (ChatRequest, plain object or dict).

        A request that names no scene is placed by the platform's chat type in its metadata
        (``chat_type_keys``, as the seed's adapters record it, e.g. ``telegram_chat_type``), then
        by whether it has a group id; a group without a group id takes it from ``chat_id_keys``.
        """
        metadata = request_field(chat_request, "metadata")
        meta: Mapping[str, Any] = metadata if isinstance(metadata, Mapping) else {}
        chat_type = _first_text(meta, self.chat_type_keys)
        default_scene = None
        if chat_type:
            default_scene = "private" if chat_type in self.private_chat_types else "group"
        context = context_from_request(
            chat_request, channel=self.channel_name, default_scene=default_scene
        )
        if context.scene == "group" and not context.group_id:
            group_id = _first_text(meta, self.chat_id_keys)
            if group_id:
                context.group_id = group_id
        return context

    def get_render_policy(
        self, context: ChannelRuntimeContext | None = None
    ) -> ChannelRenderPolicy:
        """This channel's output capabilities (the seed's per-channel table), as a fresh copy."""
        return self.render_policy.model_copy()

    def select_character_id(self, context: ChannelRuntimeContext) -> str | None:
        """A character the message asks for (metadata ``character_id``), else None = default."""
        value = context.metadata.get("character_id")
        if isinstance(value, bool) or not isinstance(value, str | int):
            return None
        return str(value).strip() or None

    def resolve_memory_scope(self, context: ChannelRuntimeContext) -> str:
        """The adapter's own memory scope: ``user`` in private chats, the group scope otherwise."""
        if context.is_private:
            return MemoryScope.user.value
        return self.group_memory_scope

    def render_result(self, result: Any, context: ChannelRuntimeContext) -> list[dict[str, Any]]:
        """Reply messages ``[{"type": "text", "content": …}]`` for ``result``'s text only.

        Accepts an object with ``.text``, a dict with ``"text"`` or a str; never reads any other
        field (the prompt never leaks). The text is sent as written; long text is split at the
        channel's max_text_length with nothing lost (see ``nekoflow.channels.render``).
        """
        return render_text(result, self.get_render_policy(context))
