"""Telegram Bot API: an ``Update`` → ChatRequest.

Reads ``message``, ``edited_message`` (``metadata["edited"]`` True), ``channel_post`` and
``edited_channel_post``; other updates (callback queries, member changes, polls…) give None, as
do service messages (no text, caption or media) and messages from bots. ``text`` or ``caption``
is the content; photo/document/sticker/voice/audio/video/animation become attachments.
``chat.type`` private is a private chat; group/supergroup/channel are groups. ``is_reply_to_bot``
comes from ``reply_to_message.from.is_bot`` (and, when ``bot_username`` is set, that username) —
except the implicit reply to a forum topic's creation message, which is not a reply. With
``bot_username`` a group message mentions the bot through a ``mention``/``bot_command`` entity
(offsets are UTF-16 units) or a ``text_mention`` of that user; the mention is removed from the
content. ``message_thread_id`` becomes ``thread_id`` in forum topics (``is_topic_message``).

``conversation_id`` is the chat id (unique across private chats and groups on Telegram). Metadata
also carries the seed's ``telegram_*`` keys (update/chat/message id, chat type) and, for edits,
``edit_date`` so each edit of a message is its own turn. ``parse_update`` is the seed's name for
``parse_event``.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from nekoflow.channels.adapters._fields import Fields
from nekoflow.channels.adapters.base import BaseChannelAdapter
from nekoflow.channels.context import Attachment, ChannelRenderPolicy, ChatRequest

_MESSAGE_KEYS = ("message", "edited_message", "channel_post", "edited_channel_post")
_MEDIA = (
    ("document", "file"),
    ("sticker", "sticker"),
    ("voice", "audio"),
    ("audio", "audio"),
    ("video", "video"),
    ("video_note", "video"),
    ("animation", "video"),
)


def utf16_slice(text: str, offset: int, length: int) -> str:
    """The part of ``text`` at a Telegram entity's UTF-16 ``offset``/``length``."""
    if offset < 0 or length < 0:
        return ""
    data = text.encode("utf-16-le", "surrogatepass")
    return data[offset * 2 : (offset + length) * 2].decode("utf-16-le", "replace")


class TelegramChannelAdapter(BaseChannelAdapter):
    """Telegram bot; ``bot_username`` (without @) enables @mention detection (optional)."""

    channel_name: ClassVar[str] = "telegram"
    chat_type_keys: ClassVar[tuple[str, ...]] = ("telegram_chat_type", "chat_type")
    chat_id_keys: ClassVar[tuple[str, ...]] = ("telegram_chat_id", "chat_id")
    render_policy: ClassVar[ChannelRenderPolicy] = ChannelRenderPolicy(
        supports_markdown=True,
        supports_image=True,
        supports_file=True,
        supports_quote_reply=True,
        supports_at=True,
        max_text_length=4096,
        split_strategy="paragraph",
    )

    def __init__(self, bot_username: str | None = None) -> None:
        self.bot_username = bot_username.lstrip("@") if bot_username else None

    def _parse(self, event: Fields) -> ChatRequest | None:
        key = next((k for k in _MESSAGE_KEYS if event.has(k)), None)
        if key is not None:
            message = event.need(key)
        elif event.has("update_id"):
            return None  # an update that is not a message
        elif event.has("message_id") and event.has("chat"):
            key, message = "message", event  # a bare Message object
        else:
            raise event.error("update_id", "is missing: not a Telegram Update")

        sender = message.obj("from")
        chat = message.need("chat")
        chat_id = chat.ident("id", required=True)
        chat_type = chat.text("type", required=True)
        is_group = chat_type != "private"
        sender_chat = message.obj("sender_chat")
        # An anonymous group admin writes as the group itself: ``from`` is the placeholder bot
        # GroupAnonymousBot and ``sender_chat`` is the group. A person wrote it: not a bot.
        anonymous_admin = (
            sender is not None
            and sender_chat is not None
            and is_group
            and sender_chat.ident("id") == chat_id
        )
        if sender is not None and sender.flag("is_bot") and not anonymous_admin:
            return None
        if anonymous_admin:
            sender = None  # the placeholder bot's id is shared by every anonymous admin

        if message.has("text"):
            text, entities_key = message.text("text"), "entities"
        else:
            text, entities_key = message.text("caption"), "caption_entities"
        attachments = self._attachments(message)
        if not text and not attachments:
            return None  # service message (member joined, pinned…) or unsupported content

        if sender is not None:
            user_id = sender.ident("id", required=True)
            full = " ".join(p for p in (sender.text("first_name"), sender.text("last_name")) if p)
            display_name = full or sender.text("username")
        elif sender_chat is not None:
            user_id = sender_chat.ident("id", required=True)
            display_name = message.text("author_signature") or sender_chat.text("title")
        elif chat_type == "channel":
            user_id, display_name = chat_id, chat.text("title")
        else:
            raise message.error("from", "is missing")

        mentioned = is_group and self._mentions_bot(message, text, entities_key)
        if self.bot_username:
            text = re.sub(rf"@{re.escape(self.bot_username)}\b", "", text, flags=re.IGNORECASE)

        reply_to, reply_to_bot = self._reply(message)
        metadata: dict[str, Any] = {"chat_type": chat_type, "edited": key.startswith("edited")}
        if anonymous_admin:
            metadata["anonymous_admin"] = True
        if event.has("update_id"):
            metadata["update_id"] = event.integer("update_id")
        if reply_to:
            metadata["reply_to_message_id"] = reply_to
        if sender is not None and sender.has("username"):
            metadata["username"] = sender.text("username")
        date = message.integer("edit_date") or message.integer("date")
        if date is not None:
            metadata["date"] = date
        if message.has("edit_date"):
            metadata["edit_date"] = message.integer("edit_date")
        metadata.update(
            telegram_update_id=metadata.get("update_id"),
            telegram_chat_id=chat_id,
            telegram_chat_type=chat_type,
            telegram_message_id=message.ident("message_id"),
        )

        is_topic = message.flag("is_topic_message")
        thread_id = message.ident("message_thread_id") if is_topic else ""
        return self._request(
            conversation_id=chat_id,
            scene="group" if is_group else "private",
            user_id=user_id,
            content=text,
            message_id=message.ident("message_id"),
            display_name=display_name,
            group_id=chat_id if is_group else "",
            group_name=chat.text("title") if is_group else "",
            thread_id=thread_id,
            attachments=attachments,
            is_mentioned=mentioned,
            is_reply_to_bot=reply_to_bot,
            metadata=metadata,
        )

    def parse_update(self, update: Any) -> ChatRequest | None:
        """The seed's name for :meth:`parse_event` (a Bot API ``Update``)."""
        return self.parse_event(update)

    def _reply(self, message: Fields) -> tuple[str, bool]:
        replied = message.obj("reply_to_message")
        if replied is None or replied.has("forum_topic_created"):
            return "", False
        author = replied.obj("from")
        to_bot = author is not None and author.flag("is_bot")
        if to_bot and self.bot_username:
            to_bot = author is not None and author.text("username").lower() == (
                self.bot_username.lower()
            )
        return replied.ident("message_id"), to_bot

    def _mentions_bot(self, message: Fields, text: str, entities_key: str) -> bool:
        if not self.bot_username:
            return False
        handle = f"@{self.bot_username}".lower()
        if not message.has(entities_key):
            return re.search(rf"{re.escape(handle)}\b", text.lower()) is not None
        for entity in message.objs(entities_key):
            kind = entity.text("type", required=True)
            offset = entity.integer("offset", required=True) or 0
            length = entity.integer("length", required=True) or 0
            if kind == "mention" and utf16_slice(text, offset, length).lower() == handle:
                return True
            if kind == "bot_command" and utf16_slice(text, offset, length).lower().endswith(handle):
                return True
            if kind == "text_mention":
                user = entity.obj("user")
                if user is not None and user.text("username").lower() == handle[1:]:
                    return True
        return False

    @staticmethod
    def _attachments(message: Fields) -> list[Attachment]:
        out: list[Attachment] = []
        photos = message.objs("photo")
        if photos:
            largest = photos[-1]  # PhotoSize array, smallest first
            out.append(
                Attachment(
                    type="image",
                    file_id=largest.ident("file_id", required=True),
                    size=largest.size("file_size"),
                )
            )
        for key, kind in _MEDIA:
            media = message.obj(key)
            if media is None or (key == "document" and message.has("animation")):
                continue  # a GIF comes as both animation and document: keep one
            out.append(
                Attachment(
                    type=kind,
                    file_id=media.ident("file_id", required=True),
                    name=media.text("file_name") or None,
                    mime_type=media.text("mime_type") or None,
                    size=media.size("file_size"),
                )
            )
        return out
