"""Property-based run of every operation of the OpenAPI schema: no input gives a 500.

Schemathesis generates requests from ``/openapi.json`` (bearer token set, so write endpoints run)
against the app on a fresh SQLite database with one world book and one character; turns run in
process, so ``POST /api/web/chat`` with ``wait`` answers at once. Responses must match the schema.
The app is built at import (``schemathesis.pytest.from_fixture`` does not support pytest 9);
:func:`database` creates and seeds its tables before the run and removes them after.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import schemathesis
from hypothesis import HealthCheck, settings
from pydantic import SecretStr
from schemathesis import Case
from sqlmodel import SQLModel

from nekoflow.api import create_app
from nekoflow.settings import Settings
from nekoflow.storage import create_all, make_engine
from nekoflow.worldbook.models import WorldBookEntry
from nekoflow.worldbook.store import WorldBookStore
from tests.api.conftest import TOKEN, Publisher, add_character, scripted_turn_deps
from tests.conftest import REDIS_URL

AUTH = {"Authorization": f"Bearer {TOKEN}"}
LAX = schemathesis.checks.negative_data_rejection
NEEDS_STATE = schemathesis.checks.positive_data_acceptance

_DB = Path(tempfile.mkdtemp(prefix="nekoflow-fuzz-")) / "fuzz.db"
_settings = Settings(
    database_url=f"sqlite:///{_DB}",
    redis_url=REDIS_URL,
    broker_url=REDIS_URL,
    api_token=SecretStr(TOKEN),
    runtime_config_path=str(_DB.with_name("absent.ini")),
)
_engine = make_engine(_settings.database_url)
_publisher = Publisher()
_publisher.inline = True
app = create_app(
    _settings, engine=_engine, turn_deps=scripted_turn_deps(_settings, _engine, _publisher)
)
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


@pytest.fixture(scope="module", autouse=True)
def database() -> Iterator[None]:
    """Tables, a world book (id ``wb``, entry ``e1``) and a character; dropped afterwards."""
    create_all(_engine)
    add_character(_engine)
    entry = WorldBookEntry(id="e1", name="白塔", keywords=["白塔"], content="白塔在城北。")
    WorldBookStore(_engine).create("翁法罗斯", id="wb", entries=[entry])
    yield
    SQLModel.metadata.drop_all(_engine)
    _engine.dispose()
    _DB.unlink(missing_ok=True)


@pytest.fixture(autouse=True)
def _redis(redis_client: redis.Redis) -> None:
    """The test Redis must be up (health checks and cooldowns use it); fails loudly otherwise."""


@schema.parametrize()
@settings(max_examples=15, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: Case) -> None:
    """No 500, responses match the schema (status, content type, body, headers, Allow).

    Not checked: ``negative_data_rejection`` (pydantic's lax mode accepts ``1.0`` for an int and
    ``false`` for a number, as intended) and ``positive_data_acceptance`` (valid-looking input is
    refused for reasons a schema cannot say: unknown ids, unknown channels, NUL characters).
    """
    excluded = [LAX, NEEDS_STATE]
    if case.path == "/healthz":  # a documented 503: ?deep=1 finds no workers or model here
        excluded.append(schemathesis.checks.not_a_server_error)
    case.call_and_validate(headers=AUTH, excluded_checks=excluded)
