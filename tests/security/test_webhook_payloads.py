"""Hostile webhook bodies: 100,000-deep JSON is a clean 400 on every webhook (never a 500 from
``RecursionError``), a QQ bot signature over a stale timestamp is refused (no replay), and the
Feishu webhook gets the shared hostile bodies (the others get them in their fuzz tests)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session

from nekoflow.platforms.onebot.protocol import sign as onebot_sign
from nekoflow.platforms.onebot.settings import OneBotBot, OneBotSettings
from nekoflow.platforms.qqbot.crypto import sign as qq_sign
from nekoflow.platforms.qqbot.settings import QQBot, QQBotSettings
from nekoflow.platforms.telegram.settings import TelegramBot, TelegramSettings
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.deps import TurnDeps
from tests.api.conftest import Publisher
from tests.security.payloads import ALLOWED, hostile
from tests.security.webhook_settings import feishu_settings

DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 40_000 + b"1" + b"}" * 40_000
QQ_SECRET = "qq-secret-0123456789"


@pytest.fixture
def hooks(make_client: Callable[..., TestClient]) -> TestClient:
    """The test app with a signing bot on every webhook (errors answered, never raised)."""
    client = make_client()
    client = TestClient(client.app, raise_server_exceptions=False)
    state = client.app.state  # type: ignore[attr-defined]
    state.onebot_settings = OneBotSettings(
        bots=[OneBotBot(self_id="5", mode="http", http_api_url="http://ob:1", secret="s")]
    )
    state.qqbot_settings = QQBotSettings(bots=[QQBot(name="neko", app_id="1", secret=QQ_SECRET)])
    state.feishu_settings = feishu_settings(encrypt_key=None)
    state.telegram_settings = TelegramSettings(
        bots=[TelegramBot(name="neko", token="1:x", mode="webhook", secret_token="tg")]
    )
    return client


def _qq_headers(body: bytes, ts: str | None = None) -> dict[str, str]:
    ts = ts if ts is not None else str(int(time.time()))
    return {
        "X-Signature-Ed25519": qq_sign(QQ_SECRET, ts.encode() + body),
        "X-Signature-Timestamp": ts,
    }


@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT], ids=["array", "object"])
def test_deeply_nested_json_is_a_clean_400(hooks: TestClient, body: bytes) -> None:
    """Signed (or token-authenticated) so the body is parsed: 400 naming the nesting."""
    requests = [
        ("/webhooks/onebot", {"X-Self-ID": "5", "X-Signature": onebot_sign(body, "s")}),
        ("/webhooks/qqbot/neko", _qq_headers(body)),
        ("/webhooks/feishu/neko", {}),  # no encrypt key: the token is in the body
        ("/webhooks/telegram/neko", {"X-Telegram-Bot-Api-Secret-Token": "tg"}),
    ]
    for path, headers in requests:
        r = hooks.post(path, content=body, headers=headers | {"Content-Type": "application/json"})
        assert r.status_code == 400, (path, r.status_code, r.text[:200])
        assert "nested too deeply" in r.json()["error"], path


def test_qq_signatures_over_stale_timestamps_are_refused(hooks: TestClient) -> None:
    payload = {"op": 0, "t": "C2C_MESSAGE_CREATE", "id": "e1", "d": {"id": "m1"}}
    body = json.dumps(payload).encode()
    for ts in ("978307200", str(int(time.time()) - 3600), str(int(time.time()) + 3600), "x"):
        r = hooks.post("/webhooks/qqbot/neko", content=body, headers=_qq_headers(body, ts))
        assert r.status_code == 401, (ts, r.text)
    fresh = hooks.post("/webhooks/qqbot/neko", content=body, headers=_qq_headers(body))
    assert fresh.status_code != 401


def test_a_feishu_signature_is_checked_before_the_body_is_parsed(
    make_client: Callable[..., TestClient],
) -> None:
    """With an Encrypt Key, a deep body with a wrong signature is a 401, not a parse."""
    client = make_client()
    client.app.state.feishu_settings = feishu_settings()  # type: ignore[attr-defined]
    ts, nonce = str(int(time.time())), "n"
    wrong = hashlib.sha256((ts + nonce + "other-key").encode() + DEEP).hexdigest()
    headers = {"X-Lark-Signature": wrong, "X-Lark-Request-Timestamp": ts}
    headers |= {"X-Lark-Request-Nonce": nonce}
    assert client.post("/webhooks/feishu/neko", content=DEEP, headers=headers).status_code == 401


_FEISHU_EVENT = (
    '{"schema": "2.0", "header": {"event_id": "ev-@NUM@", "event_type": "im.message.receive_v1",'
    ' "create_time": @NUM@, "token": "vt", "app_id": "cli_1", "tenant_key": "t"},'
    ' "event": {"sender": {"sender_id": {"open_id": "ou_7"}, "sender_type": "user"},'
    ' "message": {"message_id": "om_1", "create_time": "1718000000000", "chat_id": "oc_1",'
    ' "chat_type": "p2p", "message_type": "text", "content": "{\\"text\\": \\"@TEXT@\\"}"}}}'
)


@pytest.mark.parametrize("name", sorted(hostile(_FEISHU_EVENT)))
def test_feishu_hostile_bodies_never_fail(
    make_client: Callable[..., TestClient],
    turn_deps: TurnDeps,
    character: Role,
    publisher: Publisher,
    engine: Engine,
    name: str,
) -> None:
    """The Feishu webhook (token in the body, no Encrypt Key) gets the other webhooks' hostile
    bodies — deep nesting, oversized, NaN, 1e999, a lone surrogate, NUL: never a 500, and the
    lone surrogate is a stored turn (cleaned at the adapter), not a refusal."""
    client = TestClient(make_client(turn_deps=turn_deps).app, raise_server_exceptions=False)
    client.app.state.feishu_settings = feishu_settings(encrypt_key=None)  # type: ignore[attr-defined]
    raw = hostile(_FEISHU_EVENT)[name]
    headers = {"Content-Type": "application/json"}
    r = client.post("/webhooks/feishu/neko", content=raw, headers=headers)
    assert r.status_code in ALLOWED, (name, r.status_code, r.text[:200])
    if name == "lone-surrogate":
        assert r.status_code == 200 and r.json()["status"] == "accepted", r.text
        assert len(publisher.turn_ids) == 1
        with Session(engine) as s:
            run = s.get(TurnRun, publisher.turn_ids[0])
        assert run is not None and "\ud800" not in json.dumps(run.request, ensure_ascii=False)
        assert "\ufffd hi" in json.dumps(run.request, ensure_ascii=False)
