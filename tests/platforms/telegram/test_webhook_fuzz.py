"""The Telegram webhook under schemathesis, signed (the bot's secret token) and unsigned: no
input gives a 500 and every answer matches the OpenAPI schema. The shared API run
(tests/api/test_schemathesis.py) covers the route too, but without a configured bot it only
ever sees the 401; here the bot is configured, so update bodies reach the parser."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from pydantic import SecretStr
from schemathesis import Case
from sqlmodel import SQLModel

from nekoflow.api import create_app
from nekoflow.platforms.telegram.settings import TelegramBot, TelegramSettings
from nekoflow.settings import Settings
from nekoflow.storage import create_all, make_engine
from tests.api.conftest import Publisher, add_character, scripted_turn_deps
from tests.conftest import REDIS_URL
from tests.security.payloads import ALLOWED, hostile

SECRET = "fuzz-secret_1"
_DB = Path(tempfile.mkdtemp(prefix="nekoflow-tg-fuzz-")) / "fuzz.db"
_settings = Settings(
    database_url=f"sqlite:///{_DB}",
    redis_url=REDIS_URL,
    broker_url=REDIS_URL,
    api_token=SecretStr("unused-token-123"),
    runtime_config_path=str(_DB.with_name("absent.ini")),
)
_engine = make_engine(_settings.database_url)
_publisher = Publisher()
_publisher.inline = True
app = create_app(
    _settings, engine=_engine, turn_deps=scripted_turn_deps(_settings, _engine, _publisher)
)
app.state.telegram_settings = TelegramSettings(
    api_base_url="http://127.0.0.1:9",  # nothing listens: a reply could never leave
    bots=[
        TelegramBot(
            name="neko", token=SecretStr("1:fuzz"), secret_token=SecretStr(SECRET), mode="webhook"
        )
    ],
)
schema = schemathesis.openapi.from_asgi("/openapi.json", app).include(path_regex="telegram")
NEEDS_STATE = schemathesis.checks.positive_data_acceptance
LAX = schemathesis.checks.negative_data_rejection


@pytest.fixture(scope="module", autouse=True)
def database() -> Iterator[None]:
    create_all(_engine)
    add_character(_engine)
    yield
    SQLModel.metadata.drop_all(_engine)
    _engine.dispose()
    _DB.unlink(missing_ok=True)


def test_the_webhook_is_in_the_schema() -> None:
    paths = app.openapi()["paths"]
    assert "post" in paths["/webhooks/telegram/{bot}"]


@schema.parametrize()
@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_webhook_never_fails_on_input(case: Case) -> None:
    """Signed requests with generated bodies and bot names: 200, 401 or 422, never a 500."""
    case.path_parameters = {"bot": "neko"} if case.path_parameters else case.path_parameters
    response = case.call(headers={"X-Telegram-Bot-Api-Secret-Token": SECRET})
    if case.method.upper() != "POST":  # schemathesis also tries other methods
        assert response.status_code == 405
        return
    assert response.status_code in (200, 401, 422), response.text
    case.validate_response(response, excluded_checks=[LAX, NEEDS_STATE])
    unsigned = case.call(headers={"X-Telegram-Bot-Api-Secret-Token": "wrong"})
    assert unsigned.status_code == 401


_TG_UPDATE = (
    '{"update_id": @NUM@, "message": {"message_id": 7, "date": 1718000000, "text": "@TEXT@",'
    ' "chat": {"id": 3001, "type": "private"}, "from": {"id": 3001, "is_bot": false,'
    ' "first_name": "L"}}}'
)


@pytest.mark.parametrize("name", sorted(hostile(_TG_UPDATE)))
def test_hostile_bodies_never_fail(name: str) -> None:
    """Deep nesting, an oversized body, NaN, 1e999, lone surrogates, NUL: never a 500."""
    raw = hostile(_TG_UPDATE)[name]
    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET, "Content-Type": "application/json"}
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.post("/webhooks/telegram/neko", content=raw, headers=headers)
    assert response.status_code in ALLOWED, (name, response.text[:200])
