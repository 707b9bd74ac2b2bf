"""A Feishu app with a blank verification token is refused everywhere: in NEKOFLOW_FEISHU_APPS
(as the single-app shorthand already was), and by the event route should one ever reach it."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr, ValidationError

from nekoflow.platforms.feishu.settings import FeishuApp, FeishuSettings

APP = {"name": "neko", "app_id": "cli_1", "app_secret": "s", "mode": "webhook"}


@pytest.mark.parametrize("token", ["", "   "])
def test_a_blank_token_in_the_apps_list_is_refused(
    token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEKOFLOW_FEISHU_APPS", json.dumps([APP | {"verification_token": token}]))
    with pytest.raises(ValidationError) as err:
        FeishuSettings()
    assert "verification_token" in str(err.value) and "blank" in str(err.value)


def test_a_long_connection_app_still_needs_no_token() -> None:
    app = FeishuApp(**(APP | {"mode": "long_connection", "verification_token": " "}))
    assert len(app.verification_token.get_secret_value()) > 20  # an unguessable one


def test_the_route_refuses_unsigned_events_for_a_blank_token(
    make_client: Callable[..., TestClient],
) -> None:
    """Settings built without validation (model_construct) must still not accept "" as a token."""
    client = make_client()
    app = FeishuApp.model_construct(
        name="neko",
        app_id="cli_1",
        app_secret=SecretStr("s"),
        verification_token=SecretStr(""),
        encrypt_key=None,
        bot_open_id=None,
        reply_format="auto",
        mode="webhook",
    )
    client.app.state.feishu_settings = FeishuSettings(apps=[])  # type: ignore[attr-defined]
    client.app.state.feishu_settings.apps = [app]  # type: ignore[attr-defined]
    challenge = {"type": "url_verification", "token": "", "challenge": "c"}
    assert client.post("/webhooks/feishu/neko", json=challenge).status_code == 401
    event = {"schema": "2.0", "header": {"token": "", "event_type": "im.message.receive_v1"}}
    assert client.post("/webhooks/feishu/neko", json=event).status_code == 401
