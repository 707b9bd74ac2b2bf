"""QQ over OneBot v11 (go-cqhttp, NapCat, Lagrange, LLOneBot): message events → ChatRequest.

``message`` may be a segment array or a CQ-code string. Only ``post_type == "message"`` events
are chat messages; notices, requests, meta events (heartbeats, lifecycle), API responses and the
bot's own messages (``message_sent`` or ``user_id == self_id``) give None. A group message
mentions the bot when an ``at`` segment's qq is the bot (``bot_uin``, else the event's
``self_id``) or ``all``; private messages never count as mentions. OneBot's ``reply`` segment only
carries a message id, so ``is_reply_to_bot`` is always False here (the id is kept in
``metadata["reply_to_message_id"]``). The adapter's memory scope is the seed table's: group in
groups, user in private chats (config.ini may choose ``group_user``, which then wins).

``conversation_id`` is ``qq:group:{group_id}`` or ``qq:private:{user_id}`` (the seed's form): QQ
group numbers and QQ user numbers share one number space, so a bare number would put a private
chat and a group into the same ``conversation``/``chat_user`` scope. ``group_id`` stays the bare
group number (scope ``group`` → ``qq:group:{group_id}``). A ``face`` segment reads ``[表情]``.

An empty ``message`` (``[]`` or ``""``) falls back to the CQ-code ``raw_message``. A message with
no text, no attachment and no mention of the bot (e.g. only ``forward``/``json``/``mface``
segments) is not a chat message: None. A file segment with a ``file_id`` (NapCat's group file)
keeps that id as the attachment's ``file_id`` and ``file`` as its name.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from nekoflow.channels.adapters._fields import Fields
from nekoflow.channels.adapters.base import BaseChannelAdapter
from nekoflow.channels.context import Attachment, ChannelRenderPolicy, ChatRequest

_CQ_CODE = re.compile(r"\[CQ:([^,\]]+)((?:,[^\]]*)?)\]")
_MEDIA_TYPES = {"image": "image", "record": "audio", "video": "video", "file": "file"}


def _unescape_text(text: str) -> str:
    return text.replace("&#91;", "[").replace("&#93;", "]").replace("&amp;", "&")


def _unescape_param(text: str) -> str:
    return _unescape_text(text.replace("&#44;", ","))


def parse_cq_string(message: str) -> list[dict[str, Any]]:
    """Split a CQ-code string into OneBot segments (``[{"type", "data"}]``), unescaping values."""
    segments: list[dict[str, Any]] = []
    pos = 0
    for match in _CQ_CODE.finditer(message):
        if match.start() > pos:
            segments.append(
                {"type": "text", "data": {"text": _unescape_text(message[pos : match.start()])}}
            )
        data: dict[str, str] = {}
        for pair in match.group(2).split(",")[1:]:
            key, _, value = pair.partition("=")
            data[key.strip()] = _unescape_param(value)
        segments.append({"type": match.group(1).strip(), "data": data})
        pos = match.end()
    if pos < len(message):
        segments.append({"type": "text", "data": {"text": _unescape_text(message[pos:])}})
    return segments


class QQChannelAdapter(BaseChannelAdapter):
    """QQ through a OneBot v11 implementation; ``bot_uin`` is the bot's QQ number (optional)."""

    channel_name: ClassVar[str] = "qq"
    chat_type_keys: ClassVar[tuple[str, ...]] = ("message_type",)
    chat_id_keys: ClassVar[tuple[str, ...]] = ("group_id",)
    render_policy: ClassVar[ChannelRenderPolicy] = ChannelRenderPolicy(
        supports_markdown=False,
        supports_image=True,
        supports_file=True,
        supports_quote_reply=True,
        supports_at=True,
        max_text_length=4500,
        split_strategy="paragraph",
    )

    def __init__(self, bot_uin: str | int | None = None) -> None:
        self.bot_uin = str(bot_uin) if bot_uin not in (None, "") else None

    def _parse(self, event: Fields) -> ChatRequest | None:
        if not event.has("post_type"):
            if event.has("retcode") or event.has("echo"):
                return None  # an API response on the same connection
            raise event.error("post_type", "is missing")
        if event.text("post_type") != "message":
            return None
        message_type = event.text("message_type", required=True)
        if message_type not in ("private", "group"):
            return None  # e.g. go-cqhttp's "guild" extension
        user_id = event.ident("user_id", required=True)
        self_id = event.ident("self_id")
        if self_id and user_id == self_id:
            return None
        bot_id = self.bot_uin or self_id
        is_group = message_type == "group"
        group_id = event.ident("group_id", required=is_group) if is_group else ""

        segments = self._segments(event)
        parts: list[str] = []
        attachments: list[Attachment] = []
        mentioned = False
        reply_to = ""
        for segment in segments:
            kind = segment.text("type", required=True)
            data = segment.obj("data") or Fields(segment.channel, {}, segment.where("data"))
            if kind == "text":
                parts.append(data.text("text"))
            elif kind == "at":
                target = data.ident("qq", required=True)
                if target == "all":
                    mentioned = mentioned or is_group
                    parts.append("@全体成员")
                elif bot_id and target == bot_id:
                    mentioned = mentioned or is_group
                else:
                    parts.append(f"@{data.text('name') or target}")
            elif kind == "reply":
                reply_to = data.ident("id")
            elif kind == "face":
                parts.append("[表情]")
            elif kind in _MEDIA_TYPES:
                url = data.text("url") or None
                # NapCat's group file: ``file`` is the file name, ``file_id`` the real id
                real_id = data.text("file_id") or None
                file_id = real_id or data.text("file") or None
                name = data.text("name") or data.text("file_name") or None
                if real_id and not name:
                    name = data.text("file") or None
                attachments.append(
                    Attachment(
                        type=_MEDIA_TYPES[kind],
                        url=url,
                        file_id=file_id,
                        name=name,
                        size=data.size("file_size"),
                        source="qq",
                        file=file_id or "",
                    )
                )

        if not "".join(parts).strip() and not attachments and not mentioned:
            # nothing the adapter reads (empty, or only forward/json/mface… segments) and no
            # mention of the bot: not a chat message (it would become a "…" turn)
            return None

        sender = event.obj("sender")
        display_name = ""
        role = None
        if sender is not None:
            display_name = sender.text("card") or sender.text("nickname")
            role = sender.text("role") or None
        anonymous = event.obj("anonymous")
        if anonymous is not None:
            display_name = anonymous.text("name") or display_name
        display_name = display_name or f"QQ用户{user_id}"  # the seed's name for a nameless sender

        metadata: dict[str, Any] = {
            "post_type": "message",
            "message_type": message_type,
            "sender_nickname": sender.text("nickname") if sender is not None else "",
            "sender_role": role or "",
        }
        if event.has("sub_type"):
            metadata["sub_type"] = event.text("sub_type")
        if self_id:
            metadata["self_id"] = self_id
        if reply_to:
            metadata["reply_to_message_id"] = reply_to
        time = event.raw("time")
        if isinstance(time, int) and not isinstance(time, bool):
            metadata["time"] = time

        raw_message = event.raw("raw_message")
        if isinstance(raw_message, str):
            metadata["raw_message"] = raw_message
        return self._request(
            conversation_id=f"qq:group:{group_id}" if is_group else f"qq:private:{user_id}",
            scene="group" if is_group else "private",
            user_id=user_id,
            content="".join(parts),
            message_id=event.ident("message_id"),
            display_name=display_name,
            role=role,
            group_id=group_id,
            group_name=event.text("group_name"),
            attachments=attachments,
            is_mentioned=mentioned,
            is_reply_to_bot=False,
            metadata=metadata,
        )

    @staticmethod
    def _segments(event: Fields) -> list[Fields]:
        message = event.raw("message")
        if message in ([], "") and isinstance(event.raw("raw_message"), str):
            message = None  # some implementations leave ``message`` empty: the text is here
        if message is None:
            message = event.raw("raw_message")
            key = "raw_message"
            if message is None:
                raise event.error("message", "is missing")
        else:
            key = "message"
        if isinstance(message, str):
            return Fields(event.channel, {key: parse_cq_string(message)}, event.path).objs(key)
        if isinstance(message, list):
            return event.objs(key)
        raise event.error(
            key, f"must be a segment list or a CQ-code string, got {type(message).__name__}"
        )
