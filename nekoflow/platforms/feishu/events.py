"""A verified Feishu event → a turn: what the HTTP endpoint and the long connection share.

Both transports check the event their own way (signature, token and decryption on HTTP; the
authenticated connection for the long connection) and then call :func:`submit_event`, which
gives the Feishu adapter the bot's open_id (mention detection) and stores the event with
``submit_turn``; a re-sent event is recognised there by its message id (one turn per message).
"""

from __future__ import annotations

from typing import Any

import redis

from nekoflow.platforms.feishu.settings import FeishuApp, FeishuSettings
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.handle import TurnHandle

CHANNEL = "feishu"


def ensure_bot_open_id(
    deps: TurnDeps, app: FeishuApp, fs: FeishuSettings, client: redis.Redis | None
) -> None:
    """Give the Feishu adapter the bot's open_id once (setting, Redis, or bot info API)."""
    from nekoflow.platforms.feishu.botinfo import resolve_bot_open_id

    adapter = deps.adapter(CHANNEL)
    if getattr(adapter, "bot_open_id", None):
        return
    open_id = resolve_bot_open_id(app, fs, deps.settings, client)
    if open_id:
        adapter.bot_open_id = open_id  # type: ignore[attr-defined]


def submit_event(
    deps: TurnDeps,
    app: FeishuApp,
    fs: FeishuSettings,
    payload: dict[str, Any],
    *,
    redis_client: redis.Redis | None = None,
) -> TurnHandle:
    """Store a verified (decrypted) Feishu v2 event as a turn of ``app``'s bot."""
    ensure_bot_open_id(deps, app, fs, redis_client)
    return submit_turn(deps, CHANNEL, payload, bot=app.name)
