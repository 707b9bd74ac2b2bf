"""OneBot senders and destination: a QQ turn's chunk → ``send_msg``.

* ``ws`` bots: the socket lives in ``nekoflow gateway onebot``, so the sender hands the chunk
  over through the bot's Redis stream (``{prefix}:onebot:out:{self_id}``) and returns
  ``SendResult(handed_over=True)``; the gateway sends it and confirms the outbox row when the
  action's echo comes back. The hand-over is idempotent: a Lua script adds each chunk key to the
  stream at most once, so a retried or redelivered deliver task never queues a chunk twice.
* ``http`` bots: ``POST {http_api_url}/send_msg`` with ``Authorization: Bearer <token>``;
  HTTP status and ``retcode`` map to :class:`RetryLater` / :class:`PermanentFailure`; a timeout
  or lost connection after the request went out, or an implementation-defined failure retcode
  (e.g. -1, 1200), is :class:`Unconfirmed` (not resent unless chosen: no key).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import redis

from nekoflow.delivery.base import (
    Chunk,
    Destination,
    PermanentFailure,
    RateLimit,
    RetryLater,
    SendResult,
    Unconfirmed,
)
from nekoflow.platforms.onebot.protocol import judge, send_msg
from nekoflow.platforms.onebot.settings import OneBotBot, OneBotSettings, get_onebot_settings
from nekoflow.platforms.transport import request_failure

log = logging.getLogger(__name__)
logging.getLogger("httpx").setLevel(logging.WARNING)

PLATFORM = "onebot"
#: How long the "already queued" mark of a chunk key lives (longer than any delivery retries).
QUEUED_TTL_SECONDS = 7 * 24 * 3600

_QUEUE_ONCE = """
if redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[3]) then
  return redis.call('XADD', KEYS[1], '*', 'key', ARGV[1], 'params', ARGV[2])
end
return false
"""


def stream_key(prefix: str, self_id: str) -> str:
    """The Redis stream of chunks waiting for bot ``self_id``'s socket."""
    return f"{prefix}:onebot:out:{self_id}"


def queued_key(prefix: str, key: str) -> str:
    """The mark that chunk ``key`` is already in a stream."""
    return f"{prefix}:onebot:queued:{key}"


def onebot_destination(request: Any, bot: str | None) -> Destination | None:
    """Where a reply to a QQ (OneBot) ChatRequest goes: the group (quoting the message) or the
    private chat, sent by the bot that received it."""
    meta = request.metadata or {}
    self_id = str(bot or meta.get("self_id") or "")
    group = request.scene == "group" or meta.get("message_type") == "group"
    chat_id = str(request.group_id if group else request.user_id or "")
    if not chat_id:
        return None
    return Destination(
        platform=PLATFORM,
        bot=self_id,
        chat_type="group" if group else "private",
        chat_id=chat_id,
        reply_to=(request.message_id or None) if group else None,
    )


def onebot_limits(dest: Destination) -> list[RateLimit]:
    """Conservative defaults (QQ publishes no limits; bursts trip its risk control): 1 message
    per second per chat, 5 per second per bot account."""
    bot_key = f"{PLATFORM}:{dest.bot}"
    return [
        RateLimit(key=f"chat:{bot_key}:{dest.chat_id}", count=1, period=1.0),
        RateLimit(key=f"bot:{bot_key}", count=5, period=1.0),
    ]


class StreamSender:
    """Hands chunks to the gateway holding ``self_id``'s reverse WebSocket (Redis stream)."""

    #: Queuing a chunk twice is impossible (Lua SET NX + XADD), so a resend is harmless.
    idempotent = True

    def __init__(self, client: redis.Redis, prefix: str, self_id: str) -> None:
        self.client = client
        self.prefix = prefix
        self.self_id = self_id
        self._script = client.register_script(_QUEUE_ONCE)

    def send(self, dest: Destination, chunk: Chunk, *, key: str) -> SendResult:
        """Queue the chunk's ``send_msg`` for the gateway (text travels only in Redis)."""
        params = json.dumps(send_msg(dest, chunk), ensure_ascii=False)
        try:
            self._script(
                keys=[stream_key(self.prefix, self.self_id), queued_key(self.prefix, key)],
                args=[key, params, QUEUED_TTL_SECONDS],
            )
        except redis.RedisError as exc:
            raise RetryLater(f"onebot hand-over: redis {type(exc).__name__}") from None
        return SendResult(handed_over=True)

    def typing(self, dest: Destination) -> None:
        """OneBot v11 has no typing indicator: nothing to do."""


class HttpSender:
    """Sends chunks through the implementation's HTTP API (``POST /send_msg``)."""

    #: OneBot has no idempotency key: a lost answer must not be resent.
    idempotent = False

    def __init__(self, http: httpx.Client, base_url: str, token: str | None) -> None:
        self.http = http
        self.base_url = base_url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def send(self, dest: Destination, chunk: Chunk, *, key: str) -> SendResult:
        """Call ``send_msg``; the message id comes back as ``platform_message_id``."""
        params = send_msg(dest, chunk)
        try:
            response = self.http.post(
                f"{self.base_url}/send_msg", json=params, headers=self.headers
            )
        except httpx.HTTPError as exc:
            raise request_failure("onebot http api", exc) from None
        status = response.status_code
        if status == 429 or status >= 500:
            after = response.headers.get("Retry-After")
            retry_after = float(after) if after and after.isdigit() else None
            raise RetryLater(f"onebot http api: HTTP {status}", retry_after=retry_after)
        if status in (401, 403):
            raise PermanentFailure(f"onebot http api: HTTP {status} (access token refused)")
        if status == 404:
            raise PermanentFailure("onebot http api: HTTP 404 (no send_msg at this URL)")
        if status >= 400:
            raise PermanentFailure(f"onebot http api: HTTP {status}")
        try:
            body = response.json()
        except ValueError:
            raise RetryLater("onebot http api: answer is not JSON") from None
        if not isinstance(body, dict):
            raise RetryLater("onebot http api: answer is not an object")
        verdict = judge(body)
        if verdict.kind == "failed":
            raise PermanentFailure(verdict.reason)
        if verdict.kind == "unconfirmed":
            raise Unconfirmed(verdict.reason)
        if verdict.kind == "retry":
            raise RetryLater(verdict.reason)
        return SendResult(platform_message_id=verdict.message_id)

    def typing(self, dest: Destination) -> None:
        """OneBot v11 has no typing indicator: nothing to do."""


def make_sender(config: OneBotBot, ob: OneBotSettings, settings: Any) -> StreamSender | HttpSender:
    """The sender of one configured bot."""
    if config.mode == "http":
        assert config.http_api_url is not None  # checked by the settings
        token = config.http_api_token.get_secret_value() if config.http_api_token else None
        http = httpx.Client(timeout=httpx.Timeout(ob.timeout, connect=ob.connect_timeout))
        return HttpSender(http, config.http_api_url, token)
    from nekoflow.redis_client import make_redis

    prefix = getattr(settings, "redis_prefix", "nekoflow")
    return StreamSender(make_redis(settings.redis_url), prefix, config.self_id)


def make_onebot_sender(bot: str, settings: Any) -> StreamSender | HttpSender:
    """Sender factory for the registry (reads ``NEKOFLOW_ONEBOT_*``); PermanentFailure when the
    bot is not configured (then a QQ turn gets no outbox)."""
    ob = get_onebot_settings()
    config = ob.bot(bot)
    if config is None:
        raise PermanentFailure(f"onebot bot {bot or '(default)'} is not configured")
    return make_sender(config, ob, settings)
