"""Fixtures for QQ bot tests: the loopback fake OpenAPI, settings pointing at it, signed
callbacks, and (re-exported) the real-worker fixtures of the turn tests."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from nekoflow.delivery.registry import clear_senders
from nekoflow.delivery.settings import get_delivery_settings
from nekoflow.platforms.qqbot.crypto import sign
from nekoflow.platforms.qqbot.settings import get_qqbot_settings
from tests.platforms.qqbot.fake_qq import FakeQQ
from tests.turns.conftest import (  # noqa: F401  (fixtures)
    deps,
    live,
    published,
    role,
    worker_env,
    workers,
)

APP_ID = "102000001"
SECRET = "DG5g3B4j9X2KOErG"
HOOK = "/webhooks/qqbot/neko"

_ids = itertools.count(1)


@pytest.fixture
def fake_qq() -> Iterator[FakeQQ]:
    """The fake OpenAPI + token endpoint on an ephemeral loopback port."""
    fake = FakeQQ(APP_ID, SECRET)
    yield fake
    fake.close()


def reset_caches() -> None:
    """Settings and senders are read once per process: forget them."""
    get_qqbot_settings.cache_clear()
    get_delivery_settings.cache_clear()
    clear_senders()


@pytest.fixture
def qq_env(fake_qq: FakeQQ, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """NEKOFLOW_QQBOT_* for one webhook bot at the fake (this process; also for workers)."""
    env = {
        "NEKOFLOW_QQBOT_API_BASE_URL": fake_qq.url,
        "NEKOFLOW_QQBOT_TOKEN_URL": fake_qq.token_url,
        "NEKOFLOW_QQBOT_APP_ID": APP_ID,
        "NEKOFLOW_QQBOT_SECRET": SECRET,
        "NEKOFLOW_QQBOT_BOT_NAME": "neko",
        "NEKOFLOW_QQBOT_TIMEOUT": "5",
        "NEKOFLOW_DELIVERY_BACKOFF_BASE": "0.05",
        "NEKOFLOW_DELIVERY_BACKOFF_MAX": "0.2",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    reset_caches()
    yield env
    reset_caches()


def now_iso(offset: float = 0.0) -> str:
    """The current time as the QQ events write it (ISO 8601, +08:00)."""
    tz = timezone(timedelta(hours=8))
    return (datetime.now(tz) + timedelta(seconds=offset)).isoformat(timespec="seconds")


def c2c_event(openid: str, text: str, *, stamp: str | None = None) -> dict[str, Any]:
    """A dispatch (op 0) C2C_MESSAGE_CREATE as the webhook / gateway sends it."""
    n = next(_ids)
    return {
        "op": 0,
        "id": f"C2C_MESSAGE_CREATE:ev{n}",
        "t": "C2C_MESSAGE_CREATE",
        "d": {
            "id": f"ROBOT1.0_msg{n}_{openid}",
            "content": text,
            "timestamp": stamp or now_iso(),
            "author": {"id": openid, "user_openid": openid, "union_openid": openid},
        },
    }


def group_event(group: str, member: str, text: str) -> dict[str, Any]:
    """A GROUP_AT_MESSAGE_CREATE (someone @-mentioned the bot in a group)."""
    n = next(_ids)
    return {
        "op": 0,
        "id": f"GROUP_AT_MESSAGE_CREATE:ev{n}",
        "t": "GROUP_AT_MESSAGE_CREATE",
        "d": {
            "id": f"ROBOT1.0_gmsg{n}",
            "content": f" {text}",
            "timestamp": now_iso(),
            "group_openid": group,
            "group_id": group,
            "author": {"id": member, "member_openid": member, "union_openid": member},
        },
    }


def signed(payload: dict[str, Any], *, secret: str = SECRET, ts: str | None = None):
    """(body bytes, headers) of a callback signed with ``secret`` (at ``ts``, default now)."""
    ts = ts if ts is not None else str(int(time.time()))
    body = json.dumps(payload, ensure_ascii=False).encode()
    sig = sign(secret, ts.encode() + body)
    headers = {
        "X-Signature-Ed25519": sig,
        "X-Signature-Timestamp": ts,
        "Content-Type": "application/json",
    }
    return body, headers
