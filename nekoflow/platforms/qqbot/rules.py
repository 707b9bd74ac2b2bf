"""Pure QQ bot delivery rules: where a reply goes, its ``msg_seq``, the passive-reply window
and count, and the platform's rate limits (no HTTP, Redis or SQL)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from nekoflow.delivery.base import Destination, PermanentFailure, RateLimit

#: C2C and group messages: ``msg_seq`` makes a re-sent chunk a no-op on the platform.
PLATFORM = "qqbot"
#: Guild channels and guild DMs (no ``msg_seq`` dedupe on these endpoints).
GUILD_PLATFORM = "qqbot-guild"
#: C2C and group active messages (no ``msg_id`` to quote): ``msg_seq`` dedupes only together
#: with ``msg_id``, so these are not idempotent and get a sender that says so.
ACTIVE_PLATFORM = "qqbot-active"

_GUILD_TYPES = frozenset({"AT_MESSAGE_CREATE", "MESSAGE_CREATE"})


def qqbot_destination(request: Any, bot: str | None) -> Destination | None:
    """Where a reply to a QQ bot ChatRequest goes (C2C user, group, guild channel or guild DM),
    quoting the triggering message id (passive reply). None when the request names no chat.
    A C2C or group reply with no message id to quote is an active message (``ACTIVE_PLATFORM``).
    """
    meta = request.metadata or {}
    event_type = str(meta.get("qqbot_event_type") or meta.get("event_type") or "")
    stamp = meta.get("timestamp")
    extra = {"msg_ts": str(stamp)} if stamp not in (None, "") else {}
    reply_to = request.message_id or None
    v2_platform = PLATFORM if reply_to else ACTIVE_PLATFORM
    if event_type == "DIRECT_MESSAGE_CREATE":
        guild = str(meta.get("guild_id") or "")
        if not guild:
            return None
        return Destination(
            platform=GUILD_PLATFORM,
            bot=bot or "",
            chat_type="dm",
            chat_id=guild,
            reply_to=reply_to,
            extra=extra,
        )
    if event_type in _GUILD_TYPES:
        channel = str(request.group_id or meta.get("group_id") or "")
        if not channel:
            return None
        return Destination(
            platform=GUILD_PLATFORM,
            bot=bot or "",
            chat_type="channel",
            chat_id=channel,
            reply_to=reply_to,
            extra=extra,
        )
    if request.scene == "group":
        group = str(meta.get("qqbot_group_openid") or request.group_id or "")
        if not group:
            return None
        return Destination(
            platform=v2_platform,
            bot=bot or "",
            chat_type="group",
            chat_id=group,
            reply_to=reply_to,
            extra=extra,
        )
    user = str(meta.get("qqbot_user_openid") or request.user_id or "")
    if not user:
        return None
    return Destination(
        platform=v2_platform,
        bot=bot or "",
        chat_type="c2c",
        chat_id=user,
        reply_to=reply_to,
        extra=extra,
    )


def message_path(dest: Destination) -> str:
    """The OpenAPI path that sends a message to ``dest``."""
    if dest.chat_type == "c2c":
        return f"/v2/users/{dest.chat_id}/messages"
    if dest.chat_type == "group":
        return f"/v2/groups/{dest.chat_id}/messages"
    if dest.chat_type == "dm":
        return f"/dms/{dest.chat_id}/messages"
    if dest.chat_type == "channel":
        return f"/channels/{dest.chat_id}/messages"
    raise PermanentFailure(f"qqbot: unknown chat type {dest.chat_type!r}")


def message_body(dest: Destination, index: int, text: str) -> dict[str, Any]:
    """The send body of chunk ``index``: text, the quoted ``msg_id`` and ``msg_seq`` = index + 1
    (stable across retries, so the platform refuses a second copy of the same chunk)."""
    body: dict[str, Any] = {"content": text}
    if dest.chat_type in ("c2c", "group"):
        body["msg_type"] = 0
        body["msg_seq"] = index + 1
    if dest.reply_to:
        body["msg_id"] = dest.reply_to
    return body


def media_path(dest: Destination) -> str:
    """The rich-media upload path of ``dest`` (C2C and group chats only)."""
    if dest.chat_type == "c2c":
        return f"/v2/users/{dest.chat_id}/files"
    if dest.chat_type == "group":
        return f"/v2/groups/{dest.chat_id}/files"
    raise PermanentFailure(f"qqbot: no voice messages in {dest.chat_type!r} chats")


def voice_body(dest: Destination, index: int, file_info: str) -> dict[str, Any]:
    """The send body of a voice chunk: rich media (``msg_type`` 7) with the uploaded file's
    ``file_info``, quoted ``msg_id`` and ``msg_seq`` = index + 1 like text."""
    body: dict[str, Any] = {
        "content": " ",
        "msg_type": 7,
        "media": {"file_info": file_info},
        "msg_seq": index + 1,
    }
    if dest.reply_to:
        body["msg_id"] = dest.reply_to
    return body


def message_time(stamp: str | None) -> float | None:
    """The user's message time (epoch seconds) from the event's ISO-8601 or epoch timestamp."""
    if not stamp:
        return None
    try:
        return float(stamp)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def reply_window(dest: Destination, *, window: float, c2c_window: float) -> float:
    """The passive-reply window of ``dest``: ``c2c_window`` for C2C, ``window`` for the rest."""
    return c2c_window if dest.chat_type == "c2c" else window


def check_passive_reply(
    dest: Destination, index: int, now: float, *, window: float, max_replies: int
) -> None:
    """Raise PermanentFailure when chunk ``index`` can no longer be a passive reply: the window
    after the user's message has passed or the message already got ``max_replies`` replies."""
    if not dest.reply_to:
        return  # an active message: not bound to a window
    if index >= max_replies:
        raise PermanentFailure(
            f"qqbot: passive reply limit, at most {max_replies} replies to one message"
        )
    sent_at = message_time(dest.extra.get("msg_ts"))
    if sent_at is not None and now - sent_at > window:
        raise PermanentFailure(f"qqbot: passive reply window of {window:.0f}s has passed")


def qqbot_limits(dest: Destination) -> list[RateLimit]:
    """Conservative defaults (QQ publishes no exact per-chat rate): 5 messages/s per chat,
    20/s per bot; the passive-reply count caps each message anyway."""
    bot_key = f"{PLATFORM}:{dest.bot}"
    return [
        RateLimit(key=f"chat:{bot_key}:{dest.chat_type}:{dest.chat_id}", count=5, period=1.0),
        RateLimit(key=f"bot:{bot_key}", count=20, period=1.0),
    ]
