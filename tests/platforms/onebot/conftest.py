"""Fixtures for OneBot tests: events, settings, an in-process gateway on an ephemeral port, and
(re-exported) the real-worker fixtures of the turn tests."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from pydantic import SecretStr
from sqlalchemy.engine import Engine

from nekoflow.delivery.registry import clear_senders
from nekoflow.delivery.settings import get_delivery_settings
from nekoflow.platforms.onebot.gateway import OneBotGateway
from nekoflow.platforms.onebot.settings import OneBotBot, OneBotSettings, get_onebot_settings
from tests.turns.conftest import (  # noqa: F401  (fixtures)
    deps,
    live,
    published,
    role,
    worker_env,
    workers,
)

BOT = "3967912008"
BOT2 = "1234567"
TOKEN = "napcat-token_1"
PREFIX = "nftest"

_ids = itertools.count(1)


def reset_caches() -> None:
    """Settings and senders are read once per process: forget them."""
    get_onebot_settings.cache_clear()
    get_delivery_settings.cache_clear()
    clear_senders()


def ob_settings(**extra: Any) -> OneBotSettings:
    """Two reverse-WS bots sharing one access token, on an ephemeral port."""
    values: dict[str, Any] = {
        "ws_port": 0,
        "access_token": SecretStr(TOKEN),
        "bots": [OneBotBot(self_id=BOT), OneBotBot(self_id=BOT2)],
        "echo_timeout": 5.0,
    }
    return OneBotSettings(**(values | extra))


def private_event(user_id: int, text: str, *, self_id: str = BOT) -> dict[str, Any]:
    """A NapCat private message event (segment array)."""
    n = next(_ids)
    return {
        "self_id": int(self_id),
        "user_id": user_id,
        "time": 1_718_000_000 + n,
        "message_id": 800_000 + n,
        "message_seq": 800_000 + n,
        "real_id": 800_000 + n,
        "message_type": "private",
        "sender": {"user_id": user_id, "nickname": "莱姆", "card": ""},
        "raw_message": text,
        "font": 14,
        "sub_type": "friend",
        "message": [{"type": "text", "data": {"text": text}}],
        "message_format": "array",
        "post_type": "message",
    }


def group_at_event(group_id: int, user_id: int, text: str, *, self_id: str = BOT) -> dict:
    """A NapCat group message mentioning the bot."""
    event = private_event(user_id, text, self_id=self_id)
    event |= {
        "message_type": "group",
        "sub_type": "normal",
        "group_id": group_id,
        "raw_message": f"[CQ:at,qq={self_id}] {text}",
        "message": [
            {"type": "at", "data": {"qq": self_id}},
            {"type": "text", "data": {"text": f" {text}"}},
        ],
    }
    return event


class GatewayThread:
    """An :class:`OneBotGateway` serving in a background thread."""

    def __init__(self, gateway: OneBotGateway) -> None:
        self.gateway = gateway
        self.loop = asyncio.new_event_loop()
        self.port = 0
        ready = threading.Event()

        def on_ready(port: int) -> None:
            self.port = port
            ready.set()

        async def main() -> None:
            self.stop = asyncio.Event()
            await gateway.serve(self.stop, on_ready)

        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(main(),))
        self.thread.daemon = True
        self.thread.start()
        assert ready.wait(10), "gateway did not start"

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}{self.gateway.settings.ws_path}"

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(10)


@pytest.fixture
def submitted() -> list[tuple[dict, str]]:
    """What the in-process gateway submitted as turns: (event, self id)."""
    return []


@pytest.fixture
def make_gateway(
    engine: Engine, redis_client: redis.Redis, submitted: list
) -> Iterator[Callable[..., GatewayThread]]:
    """Start in-process gateways (closed after the test); events are recorded, not enqueued."""
    started: list[GatewayThread] = []

    def submit(event: dict, self_id: str) -> None:
        submitted.append((event, self_id))

    def make(settings: OneBotSettings | None = None, **kw: Any) -> GatewayThread:
        gw = OneBotGateway(
            engine, redis_client, settings or ob_settings(), submit, prefix=PREFIX, **kw
        )
        thread = GatewayThread(gw)
        started.append(thread)
        return thread

    yield make
    for t in started:
        t.close()
