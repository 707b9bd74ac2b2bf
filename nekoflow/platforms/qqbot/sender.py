"""QQ bot sender: a turn's chunk → a passive reply on the C2C, group, guild channel or DM
endpoint, with the token cache shared through Redis."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any

import httpx

from nekoflow.delivery.base import Chunk, Destination, PermanentFailure, SendResult
from nekoflow.platforms.qqbot.client import (
    IN_REVIEW,
    DuplicateSend,
    QQBotClient,
    QQBotError,
    fetch_access_token,
)
from nekoflow.platforms.qqbot.rules import (
    check_passive_reply,
    media_path,
    message_body,
    message_path,
    reply_window,
    voice_body,
)
from nekoflow.platforms.qqbot.settings import QQBot, QQBotSettings, get_qqbot_settings
from nekoflow.platforms.tokens import LocalTokenCache, RedisTokenCache, TokenCache


class QQBotSender:
    """Sends chunks as passive replies through one bot's client."""

    def __init__(
        self,
        client: QQBotClient,
        *,
        window: float = 300.0,
        c2c_window: float = 3600.0,
        max_replies: int = 5,
        idempotent: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        #: Passive-reply windows: groups and guild (QQ: 5 min), C2C (QQ: 60 min).
        self.window = window
        self.c2c_window = c2c_window
        self.max_replies = max_replies
        #: C2C/group passive replies are deduplicated by msg_id + msg_seq: a chunk left in
        #: flight by a dead worker is sent again and a duplicate answer means "already sent".
        #: Active messages (no msg_id) and guild sends have no such dedupe: False for those.
        self.idempotent = idempotent
        self.clock = clock

    def send(self, dest: Destination, chunk: Chunk, *, key: str) -> SendResult:
        """Send one chunk; a duplicate ``msg_seq`` answer counts as already sent."""
        if chunk.kind not in ("text", "voice"):
            raise PermanentFailure(f"chunk {chunk.index}: kind {chunk.kind!r} not supported")
        text = str(chunk.payload.get("content") or chunk.payload.get("text") or "")
        if chunk.kind == "text" and not text.strip():
            return SendResult(platform_message_id=None)
        window = reply_window(dest, window=self.window, c2c_window=self.c2c_window)
        check_passive_reply(
            dest, chunk.index, self.clock(), window=window, max_replies=self.max_replies
        )
        if chunk.kind == "voice":
            body = voice_body(dest, chunk.index, self._upload_voice(dest, chunk))
        else:
            body = message_body(dest, chunk.index, text)
        try:
            answer = self.client.call("POST", message_path(dest), body)
        except DuplicateSend:
            return SendResult(platform_message_id=None)
        except QQBotError as exc:
            if exc.code in IN_REVIEW:  # held for review: shown when approved
                return SendResult(platform_message_id=None)
            raise
        message_id = answer.get("id") if isinstance(answer, dict) else None
        return SendResult(platform_message_id=None if message_id is None else str(message_id))

    def _upload_voice(self, dest: Destination, chunk: Chunk) -> str:
        """Upload the chunk's SILK audio as rich media (file_type 3); its ``file_info``."""
        audio = chunk.payload.get("audio")
        if not isinstance(audio, bytes | bytearray) or not audio:
            raise PermanentFailure(f"chunk {chunk.index}: voice without audio")
        if chunk.payload.get("format") != "silk":
            raise PermanentFailure(f"chunk {chunk.index}: qqbot voice must be silk")
        body = {
            "file_type": 3,
            "file_data": base64.b64encode(bytes(audio)).decode("ascii"),
            "srv_send_msg": False,
        }
        answer = self.client.call("POST", media_path(dest), body)
        info = answer.get("file_info") if isinstance(answer, dict) else None
        if not info:
            raise PermanentFailure("qqbot media upload: no file_info in the answer")
        return str(info)

    def typing(self, dest: Destination) -> None:
        """The QQ bot API has no typing indicator for these chats: nothing to do."""


def token_cache(bot: QQBot, qq: QQBotSettings, settings: Any) -> TokenCache:
    """The bot's access-token cache: shared through Redis when Redis is configured."""
    http = httpx.Client(timeout=httpx.Timeout(qq.timeout, connect=qq.connect_timeout))
    secret = bot.secret.get_secret_value()

    def fetch() -> tuple[str, float]:
        return fetch_access_token(http, qq.token_url, bot.app_id, secret)

    redis_url = getattr(settings, "redis_url", None)
    if redis_url and getattr(settings, "redis_configured", True):
        from nekoflow.redis_client import make_redis

        prefix = getattr(settings, "redis_prefix", "nekoflow")
        return RedisTokenCache(
            make_redis(redis_url),
            f"{prefix}:token:qqbot:{bot.app_id}",
            fetch,
            margin=qq.token_margin_seconds,
        )
    return LocalTokenCache(fetch, margin=qq.token_margin_seconds)


def make_client(qq: QQBotSettings, name: str | None, settings: Any) -> QQBotClient:
    """An OpenAPI client of the named bot (first bot when None/""); PermanentFailure if unknown."""
    bot = qq.bot(name)
    if bot is None:
        raise PermanentFailure(f"qqbot bot {name or '(default)'} is not configured")
    return QQBotClient(
        token_cache(bot, qq, settings),
        base_url=qq.api_base_url,
        timeout=qq.timeout,
        connect_timeout=qq.connect_timeout,
    )


def _factory(idempotent: bool) -> Callable[[str, Any], QQBotSender]:
    def make(bot: str, settings: Any) -> QQBotSender:
        qq = get_qqbot_settings()
        return QQBotSender(
            make_client(qq, bot, settings),
            window=qq.reply_window_seconds,
            c2c_window=qq.c2c_reply_window_seconds,
            max_replies=qq.max_replies,
            idempotent=idempotent,
        )

    return make


#: Sender factories for the registry: C2C/group passive replies (idempotent by msg_id +
#: msg_seq), C2C/group active messages (no msg_id: not idempotent) and guild endpoints.
make_qqbot_sender = _factory(True)
make_qqbot_active_sender = _factory(False)
make_qqbot_guild_sender = _factory(False)
