"""Telegram sender and destination: a turn's chunk → ``sendMessage`` / ``sendPhoto``."""

from __future__ import annotations

import logging
from typing import Any

from nekoflow.delivery.base import (
    Chunk,
    Destination,
    PermanentFailure,
    RateLimit,
    SendResult,
)
from nekoflow.platforms.telegram.client import BotApiClient, TelegramError
from nekoflow.platforms.telegram.settings import TelegramSettings, get_telegram_settings

PLATFORM = "telegram"

log = logging.getLogger(__name__)

#: How many group → supergroup migrations a sender remembers (a bound, not a cache policy).
_MAX_MIGRATIONS = 1024


def telegram_destination(request: Any, bot: str | None) -> Destination | None:
    """Where a reply to a Telegram ChatRequest goes: its chat, its forum topic, and (in groups)
    the message it answers. None when the request names no chat."""
    meta = request.metadata or {}
    chat_id = str(meta.get("telegram_chat_id") or request.conversation_id or "")
    if not chat_id:
        return None
    chat_type = str(meta.get("telegram_chat_type") or meta.get("chat_type") or "")
    group = chat_type in ("group", "supergroup")
    return Destination(
        platform=PLATFORM,
        bot=bot or "",
        chat_type=chat_type,
        chat_id=chat_id,
        reply_to=(request.message_id or None) if group else None,
        thread_id=request.thread_id or None,
    )


def telegram_limits(dest: Destination) -> list[RateLimit]:
    """Telegram's published limits: about 1 message/s per chat, 20/min per group, 30/s per
    bot (https://core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this)."""
    bot_key = f"{PLATFORM}:{dest.bot}"
    limits = [
        RateLimit(key=f"chat:{bot_key}:{dest.chat_id}", count=1, period=1.0),
        RateLimit(key=f"bot:{bot_key}", count=30, period=1.0),
    ]
    if dest.chat_type in ("group", "supergroup"):
        limits.append(RateLimit(key=f"group:{bot_key}:{dest.chat_id}", count=20, period=60.0))
    return limits


def voice_file(chunk: Chunk) -> tuple[str, bytes, str]:
    """The (file name, audio, MIME type) upload of a voice chunk (sendVoice wants OGG/Opus)."""
    audio = chunk.payload.get("audio")
    if not isinstance(audio, bytes | bytearray) or not audio:
        raise PermanentFailure(f"chunk {chunk.index}: voice without audio")
    mime = str(chunk.payload.get("mime") or "audio/ogg")
    return ("voice.ogg", bytes(audio), mime)


def _chat_id(chat_id: str) -> int | str:
    try:
        return int(chat_id)
    except ValueError:
        return chat_id  # "@channelusername"


class TelegramSender:
    """Sends chunks through one bot's Bot API client (``sendMessage`` without parse mode, so
    the text arrives exactly as written).

    A group upgraded to a supergroup answers 400 with ``parameters.migrate_to_chat_id``
    (https://core.telegram.org/bots/api#responseparameters): the chunk is sent once more to that
    id, and the sender remembers the move so the reply's later chunks (and typing) go there too.
    """

    #: Telegram has no idempotency key for sendMessage.
    idempotent = False

    def __init__(self, client: BotApiClient) -> None:
        self.client = client
        #: Old group chat id → its supergroup's chat id, learned from migrate answers.
        self.migrated: dict[str, int] = {}

    def _target(self, dest: Destination) -> int | str:
        moved = self.migrated.get(dest.chat_id)
        return moved if moved is not None else _chat_id(dest.chat_id)

    def _common(self, dest: Destination, chunk: Chunk) -> dict[str, Any]:
        params: dict[str, Any] = {"chat_id": self._target(dest)}
        if dest.thread_id:
            params["message_thread_id"] = int(dest.thread_id)
        if dest.reply_to and chunk.index == 0:
            params["reply_parameters"] = {
                "message_id": int(dest.reply_to),
                "allow_sending_without_reply": True,
            }
        return params

    def send(self, dest: Destination, chunk: Chunk, *, key: str) -> SendResult:
        """Send one chunk; the message id comes back as ``platform_message_id``."""
        try:
            return self._send(dest, chunk)
        except TelegramError as exc:
            new_id = exc.migrate_to_chat_id
            if new_id is None or self.migrated.get(dest.chat_id) == new_id:
                raise
            if len(self.migrated) >= _MAX_MIGRATIONS:
                self.migrated.clear()
            self.migrated[dest.chat_id] = new_id
            log.warning(
                "telegram chunk %d: group migrated to a supergroup, resent there", chunk.index
            )
            return self._send(dest, chunk)

    def _send(self, dest: Destination, chunk: Chunk) -> SendResult:
        params = self._common(dest, chunk)
        if chunk.kind == "text":
            text = str(chunk.payload.get("content") or chunk.payload.get("text") or "")
            if not text.strip():
                return SendResult(platform_message_id=None)
            result = self.client.call("sendMessage", params | {"text": text})
        elif chunk.kind == "image":
            photo = chunk.payload.get("url") or chunk.payload.get("file_id")
            if not photo:
                raise PermanentFailure(f"chunk {chunk.index}: image without url or file_id")
            caption = chunk.payload.get("caption")
            extra = {"caption": str(caption)} if caption else {}
            result = self.client.call("sendPhoto", params | {"photo": str(photo)} | extra)
        elif chunk.kind == "voice":
            result = self.client.call("sendVoice", params, files={"voice": voice_file(chunk)})
        else:
            raise PermanentFailure(f"chunk {chunk.index}: kind {chunk.kind!r} not supported")
        message_id = result.get("message_id") if isinstance(result, dict) else None
        return SendResult(platform_message_id=None if message_id is None else str(message_id))

    def typing(self, dest: Destination) -> None:
        """``sendChatAction`` typing (shown for about 5 s or until the reply arrives)."""
        params: dict[str, Any] = {"chat_id": self._target(dest), "action": "typing"}
        if dest.thread_id:
            params["message_thread_id"] = int(dest.thread_id)
        self.client.call("sendChatAction", params, timeout=5.0)


def make_client(settings: TelegramSettings, bot: str | None) -> BotApiClient:
    """A Bot API client of the named bot (first bot when None/""); PermanentFailure if unknown."""
    config = settings.bot(bot)
    if config is None:
        raise PermanentFailure(f"telegram bot {bot or '(default)'} is not configured")
    return BotApiClient(
        config.token.get_secret_value(),
        base_url=settings.api_base_url,
        timeout=settings.timeout,
        connect_timeout=settings.connect_timeout,
    )


def make_telegram_sender(bot: str, settings: Any) -> TelegramSender:
    """Sender factory for the registry (reads ``NEKOFLOW_TELEGRAM_*``)."""
    return TelegramSender(make_client(get_telegram_settings(), bot))
