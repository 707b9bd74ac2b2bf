"""The QQ official bot (API v2): gateway dispatch events → ChatRequest.

Accepts the gateway payload ``{"op": 0, "t": …, "d": {…}}`` (also from webhooks), the relay form
``{"event_type": …, "event": {…}}`` and a bare ``d``, whose type is inferred from its fields
(group_openid → ``GROUP_AT_MESSAGE_CREATE``, the only group event a bot gets without the
all-messages permission; user_openid → C2C; direct_message/src_guild_id → guild DM;
guild_id/channel_id → guild channel, a mention when ``mentions`` names the bot). Chat types:
``C2C_MESSAGE_CREATE`` and ``DIRECT_MESSAGE_CREATE`` (private), ``GROUP_AT_MESSAGE_CREATE`` and
``GROUP_MESSAGE_CREATE`` (QQ group), ``AT_MESSAGE_CREATE`` and ``MESSAGE_CREATE`` (guild text
channel). Other ops (hello, heartbeat ack, webhook validation) and other event types give None,
as do messages whose author is a bot. The AT types are mentions; otherwise a ``mentions`` entry
whose id is ``bot_appid``, or that is flagged ``bot``/``is_bot``/``is_you``, is one. An
``AT_MESSAGE_CREATE`` with a ``message_reference`` and no bot mention is a reply to the bot (the
platform sends AT events for "@bot or a reply to the bot"). A message with no text, no attachment
and no mention of the bot (e.g. a shared card/ark, whose ``content`` is empty) is not a chat
message: None, as in the OneBot adapter.

QQ emoji tags in ``content`` (``<faceType=1,faceId="13",ext="…">``, ``ext`` being base64 JSON
such as ``{"text":"[呲牙]"}``) read as that ``text`` (a bare ``流泪`` as ``[流泪]``); a tag
without a readable ``ext`` reads ``[表情]``, as a OneBot ``face`` segment does. A message that is
only a face tag is a chat message.

``conversation_id`` is ``qqbot:group:{group_openid}`` (guild channels: ``qqbot:group:{channel_id}``)
or ``qqbot:private:{user_openid}`` (guild DMs: ``qqbot:private:{author.id}``, with the DM's
``guild_id`` in metadata for the reply), as the seed's adapter writes it; ``group_id`` is the bare
group openid / channel id. Metadata also carries the seed's ``qqbot_*`` keys (event type, scene,
group/user openid, message id).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any, ClassVar

from nekoflow.channels.adapters._fields import Fields
from nekoflow.channels.adapters.base import BaseChannelAdapter
from nekoflow.channels.context import Attachment, ChannelRenderPolicy, ChatRequest

_PRIVATE_TYPES = frozenset({"C2C_MESSAGE_CREATE", "DIRECT_MESSAGE_CREATE"})
_GROUP_TYPES = frozenset({"GROUP_AT_MESSAGE_CREATE", "GROUP_MESSAGE_CREATE"})
_GUILD_TYPES = frozenset({"AT_MESSAGE_CREATE", "MESSAGE_CREATE"})
_AT_TYPES = frozenset({"GROUP_AT_MESSAGE_CREATE", "AT_MESSAGE_CREATE"})
_CHAT_TYPES = _PRIVATE_TYPES | _GROUP_TYPES | _GUILD_TYPES
_MENTION_TOKEN = re.compile(r"<@!?([^>\s]+)>")
_FACE_TAG = re.compile(r"<faceType=[^<>]*>")
_FACE_EXT = re.compile(r"""\bext=(?:"([^"]*)"|'([^']*)'|([^\s,"'>]*))""")
_FACE_PLACEHOLDER = "[表情]"  # what the OneBot adapter reads for a ``face`` segment


def _face_text(tag: str) -> str:
    """The readable text of one face tag: its ``ext`` JSON's ``text``, else the placeholder."""
    found = _FACE_EXT.search(tag)
    ext = next((group for group in found.groups() if group is not None), "") if found else ""
    if not ext:
        return _FACE_PLACEHOLDER
    try:
        decoded = base64.b64decode(ext + "=" * (-len(ext) % 4), validate=True)
        value = json.loads(decoded.decode("utf-8"))
    except (binascii.Error, ValueError):  # bad base64, bad UTF-8 or not JSON
        return _FACE_PLACEHOLDER
    text = value.get("text") if isinstance(value, dict) else None
    if not isinstance(text, str) or not text.strip():
        return _FACE_PLACEHOLDER
    text = text.strip()
    # the platform writes "[呲牙]" but also a bare "流泪": bracket it so it reads as a face
    return text if text.startswith("[") and text.endswith("]") else f"[{text}]"


def _attachment_type(content_type: str) -> str:
    kind = content_type.split("/", 1)[0].lower()
    if kind in ("image", "video", "audio"):
        return kind
    if kind == "voice":
        return "audio"
    return "file"


def _infer_type(d: Fields) -> str:
    if d.has("group_openid") or d.has("group_id"):
        return "GROUP_AT_MESSAGE_CREATE"
    if d.has("guild_id") or d.has("channel_id"):
        if d.has("src_guild_id") or (
            isinstance(d.raw("direct_message"), bool) and d.raw("direct_message")
        ):
            return "DIRECT_MESSAGE_CREATE"
        return "MESSAGE_CREATE"
    author = d.obj("author")
    if author is not None and author.has("user_openid"):
        return "C2C_MESSAGE_CREATE"
    raise d.error("group_openid", "is missing: cannot tell which kind of message this is")


class QQBotChannelAdapter(BaseChannelAdapter):
    """QQ's official bot platform; ``bot_appid`` identifies the bot in ``mentions`` (optional)."""

    channel_name: ClassVar[str] = "qqbot"
    chat_type_keys: ClassVar[tuple[str, ...]] = ("qqbot_scene",)
    chat_id_keys: ClassVar[tuple[str, ...]] = ("qqbot_group_openid", "group_openid")
    render_policy: ClassVar[ChannelRenderPolicy] = ChannelRenderPolicy(
        supports_markdown=False,
        supports_image=True,
        supports_quote_reply=True,
        supports_at=True,
        max_text_length=2000,
        split_strategy="paragraph",
    )

    def __init__(self, bot_appid: str | int | None = None) -> None:
        self.bot_appid = str(bot_appid) if bot_appid not in (None, "") else None

    def _parse(self, event: Fields) -> ChatRequest | None:
        if event.has("op") or event.has("t"):
            op = event.integer("op")
            if op is not None and op != 0:
                return None  # hello, heartbeat ack, reconnect, webhook validation…
            event_type = event.text("t", required=True)
            if event_type not in _CHAT_TYPES:
                return None
            d = event.need("d")
        elif event.has("event_type"):
            event_type = event.text("event_type")
            if event_type not in _CHAT_TYPES:
                return None
            d = event.need("event") if event.has("event") else event.need("d")
        else:
            d = event
            event_type = _infer_type(d)

        author = d.need("author")
        if author.flag("bot"):
            return None
        mentions = d.objs("mentions")
        bot_ids = {m.ident("id") for m in mentions if self._is_bot_mention(m)} - {""}
        content = self._clean_content(d.text("content"), mentions, bot_ids)
        mentioned_bot = bool(bot_ids) or any(self._is_bot_mention(m) for m in mentions)
        is_at_type = event_type in _AT_TYPES
        attachments = self._attachments(d)
        # text or an attachment: a shared card/ark (empty content, no attachment) has neither
        readable = bool(content.strip() or attachments)
        reference = d.obj("message_reference")
        reply_to = reference.ident("message_id") if reference is not None else ""

        metadata: dict[str, Any] = {"event_type": event_type}
        stamp = d.raw("timestamp")
        if isinstance(stamp, str | int) and not isinstance(stamp, bool):
            metadata["timestamp"] = stamp
        if reply_to:
            metadata["reply_to_message_id"] = reply_to
        member = d.obj("member")
        display_name = (member.text("nick") if member is not None else "") or author.text(
            "username"
        )

        if event_type in _PRIVATE_TYPES:
            if event_type == "C2C_MESSAGE_CREATE":
                user_id = author.ident("user_openid", required=True)
            else:
                user_id = author.ident("id", required=True)
                metadata["guild_id"] = d.ident("guild_id", required=True)
                metadata["src_guild_id"] = d.ident("src_guild_id")
            if not readable:
                return None  # not a chat message (it would become a "…" turn)
            metadata.update(self._seed_keys(event_type, "private", "", user_id, d))
            return self._request(
                conversation_id=f"qqbot:private:{user_id}",
                scene="private",
                user_id=user_id,
                content=content,
                message_id=d.ident("id"),
                display_name=display_name,
                attachments=attachments,
                is_mentioned=False,
                is_reply_to_bot=False,
                metadata=metadata,
            )

        if event_type in _GROUP_TYPES:
            group_id = d.ident("group_openid") or d.ident("group_id")
            if not group_id:
                raise d.error("group_openid", "is missing")
            user_id = author.ident("member_openid") or author.ident("id")
            if not user_id:
                raise author.error("member_openid", "is missing")
        else:
            group_id = d.ident("channel_id", required=True)
            user_id = author.ident("id", required=True)
            metadata["guild_id"] = d.ident("guild_id")
        if not readable and not (is_at_type or mentioned_bot):
            return None  # nothing to read and no mention of the bot: not a chat message
        metadata.update(self._seed_keys(event_type, "group", group_id, user_id, d))
        return self._request(
            conversation_id=f"qqbot:group:{group_id}",
            scene="group",
            user_id=user_id,
            content=content,
            message_id=d.ident("id"),
            display_name=display_name,
            group_id=group_id,
            attachments=attachments,
            is_mentioned=is_at_type or mentioned_bot,
            is_reply_to_bot=bool(
                event_type == "AT_MESSAGE_CREATE" and reply_to and not mentioned_bot
            ),
            metadata=metadata,
        )

    @staticmethod
    def _seed_keys(
        event_type: str, scene: str, group_id: str, user_id: str, d: Fields
    ) -> dict[str, Any]:
        keys = {
            "qqbot_event_type": event_type,
            "qqbot_scene": scene,
            "qqbot_user_openid": user_id,
            "qqbot_message_id": d.ident("id"),
        }
        if group_id:
            keys["qqbot_group_openid"] = group_id
        return keys

    def _is_bot_mention(self, mention: Fields) -> bool:
        if self.bot_appid and mention.ident("id") == self.bot_appid:
            return True
        return any(
            isinstance(mention.raw(key), bool) and mention.raw(key)
            for key in ("bot", "is_bot", "is_you")
        )

    @staticmethod
    def _clean_content(content: str, mentions: list[Fields], bot_ids: set[str]) -> str:
        names = {m.ident("id"): m.text("username") for m in mentions if m.ident("id")}

        def replace(match: re.Match[str]) -> str:
            target = match.group(1)
            if target in bot_ids:
                return ""
            return f"@{names.get(target) or target}"

        # faces after mentions: a face's decoded text is not read as a mention token
        content = _MENTION_TOKEN.sub(replace, content)
        return _FACE_TAG.sub(lambda match: _face_text(match.group(0)), content)

    @staticmethod
    def _attachments(d: Fields) -> list[Attachment]:
        out: list[Attachment] = []
        for item in d.objs("attachments"):
            url = item.text("url")
            if url and "://" not in url:
                url = f"https://{url}"  # the platform often omits the scheme
            content_type = item.text("content_type")
            out.append(
                Attachment(
                    type=_attachment_type(content_type),
                    url=url or None,
                    name=item.text("filename") or None,
                    mime_type=content_type if "/" in content_type else None,
                    size=item.size("size"),
                )
            )
        return out
