"""The QQ bot callback under schemathesis with a configured bot (unsigned requests: op 13
bodies reach the validation parser, everything else is a 401) and under hypothesis with
correctly signed generated bodies (they reach the event parser): never a 500, only 200, 401 or
422, and every schemathesis answer matches the OpenAPI schema."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr
from schemathesis import Case
from sqlmodel import SQLModel

from nekoflow.api import create_app
from nekoflow.platforms.qqbot.crypto import sign
from nekoflow.platforms.qqbot.settings import QQBot, QQBotSettings
from nekoflow.settings import Settings
from nekoflow.storage import create_all, make_engine
from tests.api.conftest import Publisher, add_character, scripted_turn_deps
from tests.conftest import REDIS_URL
from tests.platforms.qqbot.conftest import signed
from tests.security.payloads import ALLOWED, hostile

SECRET = "fuzz-secret-qq"
_DB = Path(tempfile.mkdtemp(prefix="nekoflow-qq-fuzz-")) / "fuzz.db"
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
app.state.qqbot_settings = QQBotSettings(
    api_base_url="http://127.0.0.1:9",  # nothing listens: a reply could never leave
    token_url="http://127.0.0.1:9/token",
    bots=[QQBot(name="neko", app_id="1", secret=SecretStr(SECRET))],
)
schema = schemathesis.openapi.from_asgi("/openapi.json", app).include(path_regex="qqbot")
NEEDS_STATE = schemathesis.checks.positive_data_acceptance
LAX = schemathesis.checks.negative_data_rejection

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_payloads = st.fixed_dictionaries(
    {
        "op": st.sampled_from([0, 13, 11, 99]),
        "t": st.sampled_from(
            ["C2C_MESSAGE_CREATE", "GROUP_AT_MESSAGE_CREATE", "AT_MESSAGE_CREATE", "X"]
        ),
    },
    optional={
        "d": _json
        | st.fixed_dictionaries(
            {},
            optional={
                "author": _json,
                "content": _json,
                "id": _json,
                "group_openid": _json,
                "plain_token": _json,
                "event_ts": _json,
            },
        )
    },
)


@pytest.fixture(scope="module", autouse=True)
def database() -> Iterator[None]:
    create_all(_engine)
    add_character(_engine)
    yield
    SQLModel.metadata.drop_all(_engine)
    _engine.dispose()
    _DB.unlink(missing_ok=True)


@schema.parametrize()
@settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_callback_never_fails_on_input(case: Case) -> None:
    """Generated bodies and bot names, unsigned: 200 (op 13), 401 or 422, never a 500."""
    case.path_parameters = {"bot": "neko"} if case.path_parameters else case.path_parameters
    response = case.call()
    if case.method.upper() != "POST":
        assert response.status_code == 405
        return
    assert response.status_code in (200, 401, 422), response.text
    case.validate_response(response, excluded_checks=[LAX, NEEDS_STATE])


@given(payload=_payloads)
@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_signed_generated_events_never_fail(payload: dict) -> None:
    """Correctly signed generated payloads reach the parser: 200 or 422, never a 500."""
    body, headers = signed(payload, secret=SECRET)
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.post("/webhooks/qqbot/neko", content=body, headers=headers)
    assert response.status_code in (200, 422), response.text
    if response.status_code == 422:
        assert response.json()["detail"][0]["loc"]  # names the field


_QQ_EVENT = (
    '{"op": 0, "s": @NUM@, "t": "C2C_MESSAGE_CREATE", "id": "ev-1", "d": {"id": "m-1",'
    ' "content": "@TEXT@", "timestamp": "2026-01-01T00:00:00+08:00", "author": {"id": "u",'
    ' "user_openid": "u"}}}'
)


@pytest.mark.parametrize("name", sorted(hostile(_QQ_EVENT)))
def test_hostile_signed_bodies_never_fail(name: str) -> None:
    """Deep nesting, an oversized body, NaN, 1e999, lone surrogates, NUL: never a 500."""
    raw = hostile(_QQ_EVENT)[name]
    ts = str(int(time.time()))
    headers = {
        "X-Signature-Ed25519": sign(SECRET, ts.encode() + raw),
        "X-Signature-Timestamp": ts,
        "Content-Type": "application/json",
    }
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.post("/webhooks/qqbot/neko", content=raw, headers=headers)
    assert response.status_code in ALLOWED, (name, response.text[:200])
