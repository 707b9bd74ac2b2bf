"""Fixtures for Feishu tests: the loopback fake Open API, settings pointing at it, events
(plain or encrypted and signed as Feishu sends them), and the real-worker fixtures."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from nekoflow.delivery.registry import clear_senders
from nekoflow.delivery.settings import get_delivery_settings
from nekoflow.platforms.feishu import botinfo
from nekoflow.platforms.feishu.client import FeishuClient, fetch_tenant_token
from nekoflow.platforms.feishu.crypto import encrypt, signature
from nekoflow.platforms.feishu.sender import FeishuSender
from nekoflow.platforms.feishu.settings import get_feishu_settings
from nekoflow.platforms.tokens import LocalTokenCache
from tests.platforms.feishu.fake_feishu import BOT_OPEN_ID, FakeFeishu
from tests.turns.conftest import (  # noqa: F401  (fixtures)
    deps,
    live,
    published,
    role,
    worker_env,
    workers,
)

APP_ID = "cli_a1b2c3d4e5f6"
APP_SECRET = "feishu-app-secret"
VERIFY_TOKEN = "v-token-123"
ENCRYPT_KEY = "enc-key-456"
HOOK = "/webhooks/feishu/neko"

_ids = itertools.count(1)


@pytest.fixture
def sender(fake_fs: FakeFeishu) -> Iterator[FeishuSender]:
    """A real sender and client of the fake, with an in-process token cache."""
    http = httpx.Client(timeout=5)
    tokens = LocalTokenCache(lambda: fetch_tenant_token(http, fake_fs.url, APP_ID, APP_SECRET))
    client = FeishuClient(tokens, base_url=fake_fs.url, timeout=5)
    yield FeishuSender(client)
    client.close()
    http.close()


@pytest.fixture
def fake_fs() -> Iterator[FakeFeishu]:
    """The fake Open API on an ephemeral loopback port."""
    fake = FakeFeishu(APP_ID, APP_SECRET)
    yield fake
    fake.close()


def reset_caches() -> None:
    """Settings, senders and the bot open id look-up are per process: forget them."""
    get_feishu_settings.cache_clear()
    get_delivery_settings.cache_clear()
    clear_senders()
    botinfo._failed.clear()


@pytest.fixture
def fs_env(fake_fs: FakeFeishu, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """NEKOFLOW_FEISHU_* for one app at the fake, with an Encrypt Key (this process; workers)."""
    env = {
        "NEKOFLOW_FEISHU_API_BASE_URL": fake_fs.url,
        "NEKOFLOW_FEISHU_APP_ID": APP_ID,
        "NEKOFLOW_FEISHU_APP_SECRET": APP_SECRET,
        "NEKOFLOW_FEISHU_VERIFICATION_TOKEN": VERIFY_TOKEN,
        "NEKOFLOW_FEISHU_ENCRYPT_KEY": ENCRYPT_KEY,
        "NEKOFLOW_FEISHU_APP_NAME": "neko",
        "NEKOFLOW_FEISHU_TIMEOUT": "5",
        "NEKOFLOW_DELIVERY_BACKOFF_BASE": "0.05",
        "NEKOFLOW_DELIVERY_BACKOFF_MAX": "0.2",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    reset_caches()
    yield env
    reset_caches()


def message_event(
    chat_id: str,
    text: str,
    *,
    chat_type: str = "p2p",
    mention_bot: bool = False,
    token: str = VERIFY_TOKEN,
) -> dict[str, Any]:
    """An ``im.message.receive_v1`` v2.0 event carrying a text message."""
    n = next(_ids)
    mentions = []
    if mention_bot:
        text = f"@_user_1 {text}"
        mentions = [
            {"key": "@_user_1", "id": {"open_id": BOT_OPEN_ID}, "name": "neko", "tenant_key": "t"}
        ]
    return {
        "schema": "2.0",
        "header": {
            "event_id": f"ev{n}-{time.time_ns()}",
            "event_type": "im.message.receive_v1",
            "create_time": str(int(time.time() * 1000)),
            "token": token,
            "app_id": APP_ID,
            "tenant_key": "t",
        },
        "event": {
            "sender": {
                "sender_id": {"open_id": "ou_user_7", "union_id": "on_7", "user_id": "u7"},
                "sender_type": "user",
                "tenant_key": "t",
            },
            "message": {
                "message_id": f"om_{n}_{time.time_ns()}",
                "create_time": str(int(time.time() * 1000)),
                "chat_id": chat_id,
                "chat_type": chat_type,
                "message_type": "text",
                "content": json.dumps({"text": text}, ensure_ascii=False),
                "mentions": mentions,
            },
        },
    }


def sealed(
    payload: dict[str, Any], *, key: str = ENCRYPT_KEY, ts: str | None = None, nonce: str = "n1"
) -> tuple[bytes, dict[str, str]]:
    """(body, headers) as Feishu sends an event with an Encrypt Key: encrypted and signed."""
    body = json.dumps({"encrypt": encrypt(key, json.dumps(payload).encode())}).encode()
    ts = ts or str(int(time.time()))
    headers = {
        "X-Lark-Request-Timestamp": ts,
        "X-Lark-Request-Nonce": nonce,
        "X-Lark-Signature": signature(ts, nonce, key, body),
        "Content-Type": "application/json",
    }
    return body, headers
