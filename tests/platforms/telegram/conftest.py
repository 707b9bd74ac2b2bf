"""Fixtures for Telegram tests: the loopback fake Bot API, Telegram settings pointing at it,
Telegram updates, and (re-exported) the real-worker fixtures of the turn tests."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from nekoflow.delivery.registry import clear_senders
from nekoflow.delivery.settings import get_delivery_settings
from nekoflow.platforms.telegram.settings import get_telegram_settings
from tests.platforms.telegram.fake_botapi import FakeBotApi
from tests.turns.conftest import (  # noqa: F401  (fixtures)
    deps,
    live,
    published,
    role,
    worker_env,
    workers,
)

TOKEN = "123456:TEST-token_abc"
SECRET = "s3cret-Token_x"

_ids = itertools.count(1)


@pytest.fixture
def fake_tg() -> Iterator[FakeBotApi]:
    """The fake Bot API on an ephemeral loopback port."""
    fake = FakeBotApi({TOKEN})
    yield fake
    fake.close()


def reset_caches() -> None:
    """Settings and senders are read once per process: forget them."""
    get_telegram_settings.cache_clear()
    get_delivery_settings.cache_clear()
    clear_senders()


@pytest.fixture
def tg_env(fake_tg: FakeBotApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """NEKOFLOW_TELEGRAM_* for one bot at the fake (this process; also returned for workers)."""
    env = {
        "NEKOFLOW_TELEGRAM_API_BASE_URL": fake_tg.url,
        "NEKOFLOW_TELEGRAM_TOKEN": TOKEN,
        "NEKOFLOW_TELEGRAM_SECRET_TOKEN": SECRET,
        "NEKOFLOW_TELEGRAM_MODE": "webhook",
        "NEKOFLOW_TELEGRAM_BOT_NAME": "neko",
        "NEKOFLOW_TELEGRAM_TIMEOUT": "5",
        "NEKOFLOW_DELIVERY_BACKOFF_BASE": "0.05",
        "NEKOFLOW_DELIVERY_BACKOFF_MAX": "0.2",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    reset_caches()
    yield env
    reset_caches()


def tg_update(
    chat_id: int,
    text: str,
    *,
    update_id: int | None = None,
    chat_type: str = "private",
    message_id: int | None = None,
    thread_id: int | None = None,
    user_id: int = 777,
    reply_to_bot: bool = False,
) -> dict[str, Any]:
    """A Bot API ``Update`` carrying a text message."""
    n = next(_ids)
    chat: dict[str, Any] = {"id": chat_id, "type": chat_type}
    if chat_type == "private":
        chat["first_name"] = "莱姆"
    else:
        chat["title"] = "猫咖群"
    message: dict[str, Any] = {
        "message_id": message_id if message_id is not None else 10_000 + n,
        "from": {"id": user_id, "is_bot": False, "first_name": "莱姆"},
        "chat": chat,
        "date": 1_700_000_000 + n,
        "text": text,
    }
    if reply_to_bot:  # groups answer replies to the bot (Telegram's default trigger)
        message["reply_to_message"] = {
            "message_id": 1,
            "from": {"id": 1, "is_bot": True, "first_name": "neko", "username": "nekobot"},
            "chat": chat,
            "date": 1_700_000_000,
            "text": "喵?",
        }
    if thread_id is not None:
        message["message_thread_id"] = thread_id
        message["is_topic_message"] = True
    return {"update_id": update_id if update_id is not None else 500_000 + n, "message": message}
