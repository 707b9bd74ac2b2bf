"""Feishu / Lark: event subscription v2 ``im.message.receive_v1`` → ChatRequest.

``event.message.content`` is a JSON string whose shape depends on ``message_type`` (text, post,
image, file, audio, media, sticker are read). ``chat_type`` p2p is a private chat, anything else
a group; ``thread_id`` marks a topic thread. URL-verification challenges and other event types
give None, as do messages not sent by a user (``sender_type`` app/bot) and system messages. A
message of another type (share_chat, share_user, interactive, location, merge_forward…: nothing
the adapter reads), or with no text, no attachment and no mention of the bot, is not a chat
message: None, as in the OneBot adapter. Mention keys (``@_user_1``) are replaced by ``@name``;
the bot's own mention is removed. Feishu events carry no bot flag, so ``is_mentioned`` needs
``bot_open_id`` (a mention with that open_id, or ``@_all``); without it only ``@_all`` counts.
The default trigger for Feishu is ``always`` anyway (SPEC).

``conversation_id`` is the chat id (``oc_…``, unique across p2p chats and groups). Metadata also
carries the seed's ``feishu_*`` keys (event type, chat id/type, message id/type, sender id).
``parse_challenge`` answers the URL-verification request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from nekoflow.channels.adapters._fields import Fields, object_list
from nekoflow.channels.adapters.base import BaseChannelAdapter
from nekoflow.channels.context import Attachment, ChannelRenderPolicy, ChatRequest

_EVENT_TYPE = "im.message.receive_v1"
_MENTION_ALL = "@_all"
_FILE_TYPES = {"file": "file", "audio": "audio", "media": "video", "sticker": "sticker"}
#: The message types whose content the adapter reads (text or an attachment).
_READ_TYPES = frozenset({"text", "post", "image", *_FILE_TYPES})


class FeishuChannelAdapter(BaseChannelAdapter):
    """Feishu (Lark) bot; ``bot_open_id`` is the bot's open_id, used for mention detection."""

    channel_name: ClassVar[str] = "feishu"
    chat_type_keys: ClassVar[tuple[str, ...]] = ("feishu_chat_type", "chat_type")
    private_chat_types: ClassVar[frozenset[str]] = frozenset({"p2p", "private"})
    chat_id_keys: ClassVar[tuple[str, ...]] = ("feishu_chat_id", "chat_id")
    render_policy: ClassVar[ChannelRenderPolicy] = ChannelRenderPolicy(
        supports_markdown=True,
        supports_image=True,
        supports_file=True,
        supports_quote_reply=True,
        supports_at=True,
        max_text_length=4000,
        split_strategy="paragraph",
    )

    def __init__(self, bot_open_id: str | None = None) -> None:
        self.bot_open_id = bot_open_id or None

    def _parse(self, event: Fields) -> ChatRequest | None:
        if event.has("encrypt"):
            raise event.error("encrypt", "holds an encrypted event: decrypt it before parsing")
        if event.raw("type") == "url_verification":
            return None
        if event.has("schema") and event.raw("schema") != "2.0":
            raise event.error("schema", "must be '2.0' (event subscription v2)")
        header = event.obj("header")
        if header is None:
            if event.raw("type") == "event_callback":
                raise event.error("schema", "is missing: v1 event callbacks are not supported")
            raise event.error("header", "is missing")
        if header.text("event_type", required=True) != _EVENT_TYPE:
            return None
        body = event.need("event")
        sender = body.need("sender")
        sender_type = sender.text("sender_type", default="user")
        if sender_type != "user":
            return None
        sender_id = sender.need("sender_id")
        user_id = (
            sender_id.ident("open_id") or sender_id.ident("user_id") or sender_id.ident("union_id")
        )
        if not user_id:
            raise sender_id.error("open_id", "is missing")

        message = body.need("message")
        message_type = message.text("message_type", required=True)
        if message_type == "system":
            return None
        chat_id = message.ident("chat_id", required=True)
        is_group = message.text("chat_type", required=True) != "p2p"
        if message_type not in _READ_TYPES:
            # share_chat, share_user, interactive, location, merge_forward (whose content is
            # not always JSON)…: nothing the adapter reads, no mentions: not a chat message
            return None
        payload = self._content(message)
        mentions = message.objs("mentions")
        content, attachments, bot_mentioned = self._render(message_type, payload, mentions)
        if not content.strip() and not attachments and not (is_group and bot_mentioned):
            # an empty text or post and no mention of the bot: not a chat message (it would
            # become a "…" turn)
            return None

        metadata: dict[str, Any] = {
            "message_type": message_type,
            "event_id": header.text("event_id"),
        }
        reply_to = message.ident("parent_id")
        if reply_to:
            metadata["reply_to_message_id"] = reply_to
        if message.has("root_id"):
            metadata["root_id"] = message.ident("root_id")
        if header.has("tenant_key"):
            metadata["tenant_key"] = header.text("tenant_key")
        metadata.update(
            feishu_event_type=_EVENT_TYPE,
            feishu_chat_id=chat_id,
            feishu_chat_type=message.text("chat_type"),
            feishu_message_id=message.ident("message_id"),
            feishu_sender_id=user_id,
            feishu_message_type=message_type,
        )

        return self._request(
            conversation_id=chat_id,
            scene="group" if is_group else "private",
            user_id=user_id,
            content=content,
            message_id=message.ident("message_id"),
            group_id=chat_id if is_group else "",
            thread_id=message.ident("thread_id"),
            attachments=attachments,
            is_mentioned=is_group and bot_mentioned,
            is_reply_to_bot=False,
            metadata=metadata,
        )

    @staticmethod
    def parse_challenge(data: Any) -> str | None:
        """The ``challenge`` to echo back for a URL-verification request, else None."""
        if not isinstance(data, Mapping):
            return None
        challenge = data.get("challenge")
        if isinstance(challenge, str | int) and not isinstance(challenge, bool):
            return str(challenge) or None
        return None

    @staticmethod
    def _content(message: Fields) -> Fields:
        raw = message.raw("content")
        if raw is None:
            return Fields(message.channel, {}, message.where("content"))
        if not isinstance(raw, str):
            raise message.error("content", f"must be a JSON string, got {type(raw).__name__}")
        try:
            decoded = json.loads(raw) if raw.strip() else {}
        except (ValueError, RecursionError) as exc:
            raise message.error("content", f"is not valid JSON ({exc})") from exc
        if not isinstance(decoded, dict):
            raise message.error("content", "must decode to a JSON object")
        return Fields(message.channel, decoded, message.where("content"))

    def _render(
        self, message_type: str, payload: Fields, mentions: list[Fields]
    ) -> tuple[str, list[Attachment], bool]:
        """Text, attachments and whether the bot was mentioned, for one message payload."""
        names: dict[str, str] = {}
        bot_keys: set[str] = set()
        for mention in mentions:
            key = mention.text("key")
            ids = mention.obj("id")
            open_id = ids.ident("open_id") if ids is not None else ""
            if key and self.bot_open_id and open_id == self.bot_open_id:
                bot_keys.add(key)
            elif key:
                names[key] = mention.text("name") or key
        mentioned = bool(bot_keys)

        def replace_keys(text: str) -> tuple[str, bool]:
            hit = _MENTION_ALL in text
            text = text.replace(_MENTION_ALL, "@所有人")
            for key in sorted(bot_keys | names.keys(), key=len, reverse=True):
                text = text.replace(key, "" if key in bot_keys else f"@{names[key]}")
            return text, hit

        attachments: list[Attachment] = []
        if message_type == "text":
            text, hit = replace_keys(payload.text("text"))
            return text, attachments, mentioned or hit
        if message_type == "post":
            text, hit = self._post(payload, attachments, names, bot_keys)
            return text, attachments, mentioned or hit
        if message_type == "image":
            key = payload.text("image_key")
            attachments.append(
                Attachment(type="image", file_id=key or None, source="feishu", image_key=key)
            )
        elif message_type in _FILE_TYPES:
            attachments.append(
                Attachment(
                    type=_FILE_TYPES[message_type],
                    file_id=payload.text("file_key") or None,
                    name=payload.text("file_name") or None,
                )
            )
        return "", attachments, mentioned

    @staticmethod
    def _post(
        payload: Fields, attachments: list[Attachment], names: dict[str, str], bot_keys: set[str]
    ) -> tuple[str, bool]:
        """Rich text (``post``): title and paragraphs, one line each; images become attachments."""
        body = payload
        if not payload.has("content"):  # localized form {"zh_cn": {"title", "content"}}
            for key in payload.data:
                nested = payload.obj(key)
                if nested is not None and nested.has("content"):
                    body = nested
                    break
        lines: list[str] = []
        title = body.text("title")
        if title:
            lines.append(title)
        mentioned_all = False
        paragraphs = body.raw("content") or []
        if not isinstance(paragraphs, list):
            raise body.error("content", "must be a list of paragraphs")
        for index, paragraph in enumerate(paragraphs):
            where = f"{body.where('content')}[{index}]"
            parts: list[str] = []
            for element in object_list(body.channel, paragraph, where):
                tag = element.text("tag")
                if tag in ("text", "md", "code_block"):
                    parts.append(element.text("text"))
                elif tag == "a":
                    label, href = element.text("text"), element.text("href")
                    parts.append(
                        f"{label} ({href})" if label and href and label != href else href or label
                    )
                elif tag == "at":
                    key = element.ident("user_id")
                    if key in ("all", _MENTION_ALL):
                        mentioned_all = True
                        parts.append("@所有人")
                    elif key not in bot_keys:
                        parts.append(f"@{element.text('user_name') or names.get(key) or key}")
                elif tag == "img":
                    attachments.append(
                        Attachment(type="image", file_id=element.text("image_key") or None)
                    )
                elif tag == "media":
                    attachments.append(
                        Attachment(type="video", file_id=element.text("file_key") or None)
                    )
                elif tag == "emotion":
                    parts.append(f"[{element.text('emoji_type')}]")
            lines.append("".join(parts))
        return "\n".join(lines), mentioned_all
