"""Request bodies: 413 over the route family's limit before the body is read, and every webhook
authenticates from its headers before reading (an unsigned body is read to a few KB at most)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from nekoflow.api.bodies import UNSIGNED_MAX_BYTES
from nekoflow.platforms.onebot.settings import OneBotBot, OneBotSettings
from nekoflow.platforms.qqbot.settings import QQBot, QQBotSettings
from nekoflow.platforms.telegram.settings import TelegramBot, TelegramSettings
from tests.security.asgi import call
from tests.security.webhook_settings import feishu_settings

CHUNK = 65536
WEBHOOKS = ["/webhooks/onebot", "/webhooks/qqbot/neko", "/webhooks/feishu/neko"]
WEBHOOKS += ["/webhooks/telegram/neko"]


@pytest.fixture
def app(make_client: Callable[..., TestClient]):  # type: ignore[no-untyped-def]
    """The test app with every platform's webhook configured for a bot named ``neko``."""
    client = make_client()
    state = client.app.state  # type: ignore[attr-defined]
    state.onebot_settings = OneBotSettings(
        bots=[OneBotBot(self_id="5", mode="http", http_api_url="http://ob:1", secret="s")]
    )
    state.qqbot_settings = QQBotSettings(bots=[QQBot(name="neko", app_id="1", secret="qq-secret")])
    state.feishu_settings = feishu_settings()
    state.telegram_settings = TelegramSettings(
        bots=[TelegramBot(name="neko", token="1:x", mode="webhook", secret_token="tg-secret")]
    )
    return client.app


@pytest.mark.parametrize("path", WEBHOOKS)
def test_a_declared_oversized_body_is_413_unread(app, path: str) -> None:  # type: ignore[no-untyped-def]
    """100 MB announced in Content-Length: 413 at once, not one byte read."""
    out = call(app, path, chunks=1600, declare_length=True, headers={"X-Self-ID": "5"})
    assert out.status == 413, out.body
    assert out.read_bytes == 0
    assert "limit" in out.json()["error"]


def test_a_chunked_oversized_body_stops_at_the_limit(app) -> None:  # type: ignore[no-untyped-def]
    """No Content-Length (chunked): reading stops just past the webhook limit (256 KiB)."""
    headers = {"X-Self-ID": "5", "X-Signature": "sha1=00"}  # a signature is there: read on
    out = call(app, "/webhooks/onebot", chunks=1600, headers=headers)
    assert out.status == 413, out.body
    assert out.read_bytes <= 256 * 1024 + CHUNK


def test_limits_are_per_route_family(make_client: Callable[..., TestClient], auth) -> None:  # type: ignore[no-untyped-def]
    client = make_client(
        api_max_body_bytes=1000, api_world_book_max_body_bytes=5000, api_webhook_max_body_bytes=100
    )
    app = client.app
    headers = auth | {"Content-Type": "application/json"}
    api = call(app, "/api/turns", chunks=1, chunk=b" " * 1500, headers=headers)
    assert api.status == 413
    books = call(app, "/api/world-books", chunks=1, chunk=b" " * 1500, headers=headers)
    assert books.status == 422  # under the world-book limit: read, and found not JSON
    books = call(app, "/api/world-books", chunks=1, chunk=b" " * 6000, headers=headers)
    assert books.status == 413
    hook = call(app, "/webhooks/telegram/x", chunks=1, chunk=b" " * 150, declare_length=True)
    assert hook.status == 413


@pytest.mark.parametrize("path", WEBHOOKS)
def test_an_unknown_bot_is_refused_before_its_body_is_read(app, path: str) -> None:  # type: ignore[no-untyped-def]
    unknown = path.replace("/neko", "/stranger")
    out = call(app, unknown, chunks=3, headers={"X-Self-ID": "6"})
    assert out.status == 401, out.body
    assert out.read_bytes == 0


@pytest.mark.parametrize("path", ["/webhooks/qqbot/neko", "/webhooks/feishu/neko"])
def test_an_unsigned_body_is_read_to_a_few_kb(app, path: str) -> None:  # type: ignore[no-untyped-def]
    """Without a signature header only a tiny challenge may come: 200 KB are not read whole."""
    out = call(app, path, chunks=100, chunk=b"[" * 2048)
    assert out.status == 401, out.body
    assert out.read_bytes <= UNSIGNED_MAX_BYTES + 2048


def test_a_onebot_event_without_its_signature_is_refused_unread(app) -> None:  # type: ignore[no-untyped-def]
    """A known http bot with a secret: no ``X-Signature`` header (or not ``sha1=…``) is a 401
    before any of the body is read, as Telegram's secret-token check is."""
    for headers in ({"X-Self-ID": "5"}, {"X-Self-ID": "5", "X-Signature": "md5=abc"}):
        out = call(app, "/webhooks/onebot", chunks=3, headers=headers)
        assert out.status == 401, out.body
        assert out.read_bytes == 0
