"""The Feishu bot's own open_id, for mention detection without hand configuration.

The ``bot_open_id`` setting wins; otherwise it is read once from the bot info API
(``GET /open-apis/bot/v3/info``) and kept in Redis for a day (all API processes share it). A
failed look-up is logged (code only) and tried again after a minute; meanwhile only ``@_all``
counts as a mention.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any

import redis

from nekoflow.delivery.base import DeliveryError
from nekoflow.platforms.feishu.sender import make_client
from nekoflow.platforms.feishu.settings import FeishuApp, FeishuSettings

log = logging.getLogger(__name__)

CACHE_SECONDS = 86400
RETRY_SECONDS = 60.0
_failed: dict[str, float] = {}
_lock = threading.Lock()


def resolve_bot_open_id(
    app: FeishuApp, fs: FeishuSettings, settings: Any, client: redis.Redis | None
) -> str | None:
    """The app bot's open_id: setting, Redis cache, or the bot info API; None when unknown."""
    if app.bot_open_id:
        return app.bot_open_id
    key = f"{getattr(settings, 'redis_prefix', 'nekoflow')}:feishu:bot_open_id:{app.app_id}"
    if client is not None:
        try:
            cached = client.get(key)
        except redis.RedisError:
            cached = None
        if cached:
            return cached.decode() if isinstance(cached, bytes) else str(cached)
    with _lock:
        if time.monotonic() < _failed.get(app.app_id, 0.0):
            return None
    api = make_client(fs, app.name, settings)
    try:
        open_id = api.bot_open_id()
    except DeliveryError as exc:
        log.warning("feishu app %s: bot info unavailable (%s)", app.name, exc.reason)
        with _lock:
            _failed[app.app_id] = time.monotonic() + RETRY_SECONDS
        return None
    finally:
        api.close()
    if client is not None:
        with contextlib.suppress(redis.RedisError):
            client.set(key, open_id, ex=CACHE_SECONDS)
    return open_id
