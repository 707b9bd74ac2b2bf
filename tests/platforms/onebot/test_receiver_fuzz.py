"""The OneBot HTTP POST receiver under schemathesis with a configured, signing bot: generated
requests without a signature are always 401 and match the schema; signed generated bodies
(OneBot-shaped events and arbitrary JSON) give 204 or 422, never a 500."""

from __future__ import annotations

import json
import tempfile
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
from nekoflow.platforms.onebot.protocol import sign
from nekoflow.platforms.onebot.settings import OneBotBot, OneBotSettings
from nekoflow.settings import Settings
from nekoflow.storage import create_all, make_engine
from tests.api.conftest import Publisher, add_character, scripted_turn_deps
from tests.conftest import REDIS_URL
from tests.security.payloads import ALLOWED, hostile

SECRET = "fuzz-sig"
_DB = Path(tempfile.mkdtemp(prefix="nekoflow-ob-fuzz-")) / "fuzz.db"
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
app.state.onebot_settings = OneBotSettings(
    bots=[
        OneBotBot(
            self_id="10001",
            mode="http",
            http_api_url="http://127.0.0.1:9",  # nothing listens: a reply could never leave
            secret=SecretStr(SECRET),
        )
    ]
)
schema = schemathesis.openapi.from_asgi("/openapi.json", app).include(path_regex="onebot")
LAX = schemathesis.checks.negative_data_rejection
NEEDS_STATE = schemathesis.checks.positive_data_acceptance


@pytest.fixture(scope="module", autouse=True)
def database() -> Iterator[None]:
    create_all(_engine)
    add_character(_engine)
    yield
    SQLModel.metadata.drop_all(_engine)
    _engine.dispose()
    _DB.unlink(missing_ok=True)


def test_the_receiver_is_in_the_schema() -> None:
    assert "post" in app.openapi()["paths"]["/webhooks/onebot"]


@schema.parametrize()
@settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_unsigned_requests_are_refused(case: Case) -> None:
    """Generated requests of a configured bot without a signature: always 401, as documented."""
    response = case.call(headers={"X-Self-ID": "10001"})
    if case.method.upper() != "POST":
        assert response.status_code == 405
        return
    assert response.status_code == 401, response.text
    case.validate_response(response, excluded_checks=[LAX, NEEDS_STATE])


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_segment = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["text", "at", "image", "file", "json", "forward", "x"]),
        "data": st.dictionaries(st.sampled_from(["text", "qq", "file", "file_id", "id"]), _json),
    }
)
_event = st.fixed_dictionaries(
    {"post_type": st.sampled_from(["message", "notice", "meta_event", "request", 3])},
    optional={
        "message_type": st.sampled_from(["private", "group", "guild", None]),
        "self_id": st.integers(0, 10**10) | st.text(max_size=5),
        "user_id": st.integers(0, 10**10) | st.text(max_size=5) | st.none(),
        "group_id": st.integers(0, 10**10) | st.none(),
        "message": st.lists(_segment, max_size=4) | st.text(max_size=30) | _json,
        "raw_message": st.text(max_size=30) | st.none(),
        "sender": _json,
    },
)


@given(body=_event | _json)
@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_signed_bodies_never_fail(body: object) -> None:
    """Signed generated events (OneBot-shaped and arbitrary JSON): 204 or 422, never a 500."""
    raw = json.dumps(body).encode()
    headers = {"X-Self-ID": "10001", "Content-Type": "application/json"}
    with TestClient(app, raise_server_exceptions=False) as client:
        signed = headers | {"X-Signature": sign(raw, SECRET)}
        response = client.post("/webhooks/onebot", content=raw, headers=signed)
        assert response.status_code in (204, 422), response.text
        if response.status_code == 422:
            assert response.json()  # an error body naming the field
        tampered = headers | {"X-Signature": sign(raw + b" ", SECRET)}
        assert client.post("/webhooks/onebot", content=raw, headers=tampered).status_code == 401


_ONEBOT_EVENT = (
    '{"post_type": "message", "message_type": "private", "sub_type": "friend", "self_id": 10001,'
    ' "user_id": 30009, "message_id": @NUM@, "time": 1718000000, "raw_message": "@TEXT@",'
    ' "message": [{"type": "text", "data": {"text": "@TEXT@"}}], "sender": {"user_id": 30009}}'
)


@pytest.mark.parametrize("name", sorted(hostile(_ONEBOT_EVENT)))
def test_hostile_signed_bodies_never_fail(name: str) -> None:
    """Deep nesting, an oversized body, NaN, 1e999, lone surrogates, NUL: never a 500."""
    raw = hostile(_ONEBOT_EVENT)[name]
    headers = {"X-Self-ID": "10001", "Content-Type": "application/json"}
    with TestClient(app, raise_server_exceptions=False) as client:
        signed = headers | {"X-Signature": sign(raw, SECRET)}
        response = client.post("/webhooks/onebot", content=raw, headers=signed)
    assert response.status_code in ALLOWED, (name, response.text[:200])
