"""Feishu sender and destination: a turn's chunk → a reply to the triggering message
(``/open-apis/im/v1/messages/{message_id}/reply``), text or post, idempotent by ``uuid``; a
plain send to the chat when the user recalled that message (code 230011)."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx

from nekoflow.delivery.base import Chunk, Destination, PermanentFailure, RateLimit, SendResult
from nekoflow.platforms.feishu.client import FeishuClient, FeishuError, fetch_tenant_token
from nekoflow.platforms.feishu.settings import FeishuApp, FeishuSettings, get_feishu_settings
from nekoflow.platforms.tokens import LocalTokenCache, RedisTokenCache, TokenCache

PLATFORM = "feishu"

log = logging.getLogger(__name__)

#: "The message is recalled": the reply target was withdrawn by its sender.
RECALLED = 230011


def feishu_destination(request: Any, bot: str | None) -> Destination | None:
    """Where a reply to a Feishu ChatRequest goes: its chat, as a reply to its message (in its
    topic thread when it has one). None when the request names no chat."""
    meta = request.metadata or {}
    chat_id = str(meta.get("feishu_chat_id") or request.conversation_id or "")
    if not chat_id:
        return None
    return Destination(
        platform=PLATFORM,
        bot=bot or "",
        chat_type=str(meta.get("feishu_chat_type") or ""),
        chat_id=chat_id,
        reply_to=request.message_id or None,
        thread_id=request.thread_id or None,
    )


def feishu_limits(dest: Destination) -> list[RateLimit]:
    """Feishu's published limits: 5 messages/s to one user or group (shared by the group's
    bots), and the send API's 50/s per app."""
    bot_key = f"{PLATFORM}:{dest.bot}"
    return [
        RateLimit(key=f"chat:{bot_key}:{dest.chat_id}", count=5, period=1.0),
        RateLimit(key=f"bot:{bot_key}", count=50, period=1.0),
    ]


def message_content(text: str, fmt: str) -> tuple[str, str]:
    """(msg_type, content JSON string) of a text chunk: ``text`` or a ``post`` with one ``md``
    paragraph (Feishu renders its Markdown)."""
    if fmt == "post":
        post = {"zh_cn": {"content": [[{"tag": "md", "text": text}]]}}
        return "post", json.dumps(post, ensure_ascii=False)
    return "text", json.dumps({"text": text}, ensure_ascii=False)


def reply_format(app: FeishuApp) -> str:
    """``text`` or ``post``: the app's setting, ``auto`` following the channel's render policy
    (Markdown-capable → post)."""
    if app.reply_format != "auto":
        return app.reply_format
    from nekoflow.channels.adapters import FeishuChannelAdapter

    return "post" if FeishuChannelAdapter.render_policy.supports_markdown else "text"


class FeishuSender:
    """Sends chunks as replies through one app's client (to the chat itself when the message
    replied to was recalled: the reply API refuses it with code 230011, the send API does not
    need it)."""

    #: Feishu deduplicates sends carrying the same ``uuid`` for an hour: a chunk a dead worker
    #: left in flight is sent again with the same uuid and arrives once.
    idempotent = True

    def __init__(self, client: FeishuClient, *, fmt: str = "text") -> None:
        self.client = client
        self.fmt = fmt

    def send(self, dest: Destination, chunk: Chunk, *, key: str) -> SendResult:
        """Send one chunk; the message id comes back as ``platform_message_id``."""
        if chunk.kind == "voice":
            msg_type, content = "audio", json.dumps({"file_key": self._upload_voice(chunk)})
        elif chunk.kind != "text":
            raise PermanentFailure(f"chunk {chunk.index}: kind {chunk.kind!r} not supported")
        else:
            text = str(chunk.payload.get("content") or chunk.payload.get("text") or "")
            if not text.strip():
                return SendResult(platform_message_id=None)
            msg_type, content = message_content(text, self.fmt)
        body: dict[str, Any] = {"msg_type": msg_type, "content": content, "uuid": key[:50]}
        data: Any = None
        if dest.reply_to:
            reply = body | ({"reply_in_thread": True} if dest.thread_id else {})
            try:
                data = self.client.call(
                    "POST", f"/open-apis/im/v1/messages/{dest.reply_to}/reply", reply
                )
            except FeishuError as exc:
                if exc.code != RECALLED:
                    raise
                log.warning(
                    "feishu chunk %d: replied-to message recalled, sent to the chat", chunk.index
                )
                dest = dest.model_copy(update={"reply_to": None})
        if not dest.reply_to:  # same uuid: a resent fallback still arrives once
            data = self.client.call(
                "POST",
                "/open-apis/im/v1/messages",
                body | {"receive_id": dest.chat_id},
                receive_id_type="chat_id",
            )
        message_id = data.get("message_id") if isinstance(data, dict) else None
        return SendResult(platform_message_id=None if message_id is None else str(message_id))

    def _upload_voice(self, chunk: Chunk) -> str:
        """Upload the chunk's Ogg/Opus audio (file_type ``opus``); its ``file_key``."""
        audio = chunk.payload.get("audio")
        if not isinstance(audio, bytes | bytearray) or not audio:
            raise PermanentFailure(f"chunk {chunk.index}: voice without audio")
        return self.client.upload_file(
            "opus",
            "voice.opus",
            bytes(audio),
            str(chunk.payload.get("mime") or "audio/ogg"),
            duration_ms=int(chunk.payload.get("duration_ms") or 0),
        )

    def typing(self, dest: Destination) -> None:
        """Feishu bots have no typing indicator: nothing to do."""


def token_cache(app: FeishuApp, fs: FeishuSettings, settings: Any) -> TokenCache:
    """The app's tenant-token cache: shared through Redis when Redis is configured."""
    http = httpx.Client(timeout=httpx.Timeout(fs.timeout, connect=fs.connect_timeout))
    secret = app.app_secret.get_secret_value()

    def fetch() -> tuple[str, float]:
        return fetch_tenant_token(http, fs.api_base_url, app.app_id, secret)

    redis_url = getattr(settings, "redis_url", None)
    if redis_url and getattr(settings, "redis_configured", True):
        from nekoflow.redis_client import make_redis

        prefix = getattr(settings, "redis_prefix", "nekoflow")
        return RedisTokenCache(
            make_redis(redis_url),
            f"{prefix}:token:feishu:{app.app_id}",
            fetch,
            margin=fs.token_margin_seconds,
        )
    return LocalTokenCache(fetch, margin=fs.token_margin_seconds)


def make_client(fs: FeishuSettings, name: str | None, settings: Any) -> FeishuClient:
    """An Open API client of the named app (first app when None/""); PermanentFailure if
    unknown."""
    app = fs.app(name)
    if app is None:
        raise PermanentFailure(f"feishu app {name or '(default)'} is not configured")
    return FeishuClient(
        token_cache(app, fs, settings),
        base_url=fs.api_base_url,
        timeout=fs.timeout,
        connect_timeout=fs.connect_timeout,
    )


def make_feishu_sender(bot: str, settings: Any) -> FeishuSender:
    """Sender factory for the registry (reads ``NEKOFLOW_FEISHU_*``)."""
    fs = get_feishu_settings()
    app = fs.app(bot)
    if app is None:
        raise PermanentFailure(f"feishu app {bot or '(default)'} is not configured")
    return FeishuSender(make_client(fs, bot, settings), fmt=reply_format(app))
