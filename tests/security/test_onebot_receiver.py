"""``POST /webhooks/onebot`` accepts only ``http`` bots: a reverse-WebSocket bot's QQ number is no
credential, and an ``http`` bot without a secret needs an explicit ``allow_unsigned``."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr, ValidationError

from nekoflow.platforms.onebot.protocol import sign
from nekoflow.platforms.onebot.settings import OneBotBot, OneBotSettings
from nekoflow.storage.dialogue import Role
from nekoflow.turns.deps import TurnDeps
from tests.api.conftest import Publisher

WS_BOT = "3889000001"
PATH = "/webhooks/onebot"


def _event(self_id: str, text: str = "在吗?") -> bytes:
    event = {
        "post_type": "message",
        "message_type": "private",
        "sub_type": "friend",
        "self_id": int(self_id),
        "user_id": 30009,
        "message_id": 123,
        "time": 1_718_000_000,
        "sender": {"user_id": 30009, "nickname": "莱姆"},
        "raw_message": text,
        "message": [{"type": "text", "data": {"text": text}}],
    }
    return json.dumps(event, ensure_ascii=False).encode()


@pytest.fixture
def onebot_client(
    make_client: Callable[..., TestClient], turn_deps: TurnDeps, character: Role
) -> Callable[[OneBotSettings], TestClient]:
    """A test app submitting turns to ``publisher``, with the given OneBot settings."""

    def build(settings: OneBotSettings) -> TestClient:
        client = make_client(turn_deps=turn_deps)
        client.app.state.onebot_settings = settings  # type: ignore[attr-defined]
        return client

    return build


def test_a_reverse_websocket_bot_cannot_be_posted_as(
    onebot_client: Callable[[OneBotSettings], TestClient], publisher: Publisher
) -> None:
    """The README's NapCat set-up (ws bot, access token, no secret): forged events are 401."""
    settings = OneBotSettings(access_token=SecretStr("ws-token"), bots=[{"self_id": WS_BOT}])
    client = onebot_client(settings)
    headers = {"X-Self-ID": WS_BOT, "Content-Type": "application/json"}
    forged = client.post(PATH, content=_event(WS_BOT), headers=headers)
    assert forged.status_code == 401, forged.text
    assert "http mode" in forged.json()["error"]
    # even signed with the access token, a ws bot never takes events here
    signed = headers | {"X-Signature": sign(_event(WS_BOT), "ws-token")}
    assert client.post(PATH, content=_event(WS_BOT), headers=signed).status_code == 401
    assert publisher.turn_ids == []


def test_an_http_bot_without_a_secret_is_refused_at_start_up() -> None:
    with pytest.raises(ValidationError) as err:
        OneBotSettings(bots=[{"self_id": "5", "mode": "http", "http_api_url": "http://ob:3000"}])
    assert "allow_unsigned" in str(err.value) and "secret" in str(err.value)


def test_the_http_shorthand_without_a_secret_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEKOFLOW_ONEBOT_SELF_ID", "5")
    monkeypatch.setenv("NEKOFLOW_ONEBOT_MODE", "http")
    monkeypatch.setenv("NEKOFLOW_ONEBOT_HTTP_API_URL", "http://ob:3000")
    with pytest.raises(ValidationError, match="allow_unsigned"):
        OneBotSettings()
    monkeypatch.setenv("NEKOFLOW_ONEBOT_ALLOW_UNSIGNED", "true")
    bot = OneBotSettings().bot("5")
    assert bot is not None and bot.allow_unsigned and bot.secret is None


def test_an_explicitly_unsigned_http_bot_takes_unsigned_events(
    onebot_client: Callable[[OneBotSettings], TestClient], publisher: Publisher
) -> None:
    bot = OneBotBot(self_id="5", mode="http", http_api_url="http://ob:3000", allow_unsigned=True)
    client = onebot_client(OneBotSettings(bots=[bot]))
    headers = {"X-Self-ID": "5", "Content-Type": "application/json"}
    assert client.post(PATH, content=_event("5"), headers=headers).status_code == 204
    assert len(publisher.turn_ids) == 1


def test_a_signed_http_bot_still_needs_its_signature(
    onebot_client: Callable[[OneBotSettings], TestClient], publisher: Publisher
) -> None:
    bot = OneBotBot(self_id="5", mode="http", http_api_url="http://ob:3000", secret="sig")
    client = onebot_client(OneBotSettings(bots=[bot]))
    headers = {"X-Self-ID": "5", "Content-Type": "application/json"}
    assert client.post(PATH, content=_event("5"), headers=headers).status_code == 401
    good = headers | {"X-Signature": sign(_event("5"), "sig")}
    assert client.post(PATH, content=_event("5"), headers=good).status_code == 204
    assert len(publisher.turn_ids) == 1
