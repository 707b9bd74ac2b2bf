"""Shared fixtures: SQL engines (SQLite always, PostgreSQL when configured) and a real Redis.

- ``engine`` is parametrized: ``sqlite`` always, ``postgres`` when ``NEKOFLOW_TEST_DATABASE_URL``
  is set (CI sets it). Each PostgreSQL test gets its own schema, dropped afterwards.
- ``redis_client`` talks to the real Redis at ``NEKOFLOW_TEST_REDIS_URL`` (default db 15 on
  127.0.0.1:6379) and flushes that database before each test. A missing Redis is an error, not
  a skip. Under ``pytest -n N`` each worker process takes its own database (15, 14, …).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
from sqlalchemy import text
from sqlalchemy.engine import Engine

from nekoflow.settings import Settings
from nekoflow.storage import create_all, make_engine

PG_URL = os.environ.get("NEKOFLOW_TEST_DATABASE_URL")
ROOT = Path(__file__).resolve().parents[1]

XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
"""``gw0``, ``gw1``, … when the suite runs in parallel (``pytest -n N``), else empty."""


def _per_worker_redis(url: str) -> str:
    """The test Redis database of this pytest process: parallel workers count down from the
    configured database (15, 14, …) so that flushing one never touches another's."""
    if not XDIST_WORKER:
        return url
    parts = urlsplit(url)
    db = int(parts.path.strip("/") or 0) - int(XDIST_WORKER.removeprefix("gw"))
    if db < 0:
        raise RuntimeError(f"NEKOFLOW_TEST_REDIS_URL {url}: too few Redis databases below it")
    return urlunsplit(parts._replace(path=f"/{db}"))


REDIS_URL = _per_worker_redis(
    os.environ.get("NEKOFLOW_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
)

BROKER_URL = os.environ.get("NEKOFLOW_TEST_BROKER_URL") or REDIS_URL
"""The test broker: the test Redis, or RabbitMQ when NEKOFLOW_TEST_BROKER_URL names one."""

# The Celery app in this process publishes to the test broker (set before `tasks` is imported).
# A parallel worker inherits the controlling process's values: it must use its own database.
_set_env = os.environ.__setitem__ if XDIST_WORKER else os.environ.setdefault
_set_env("NEKOFLOW_BROKER_URL", BROKER_URL)
_set_env("NEKOFLOW_RESULT_BACKEND", REDIS_URL)

DB_BACKENDS = ["sqlite"] + (["postgres"] if PG_URL else [])

PG_TEST_OPTIONS = "-csynchronous_commit=off"
"""Test sessions do not wait for the WAL flush at commit: what a test checks never depends on
the server surviving a power cut, and a commit then costs no disk sync (the per-test schema's
DDL alone took ~0.5 s of waiting)."""
# libpq reads PGOPTIONS for every connection without its own ``options`` (this process's and
# the subprocesses', which inherit the environment).
os.environ.setdefault("PGOPTIONS", PG_TEST_OPTIONS)


production_db_only = pytest.mark.parametrize("db_url", DB_BACKENDS[-1:], indirect=True)
"""For the slowest real-worker tests whose point is not the database: run them on PostgreSQL
(the production database) alone when it is configured, else on SQLite."""


def _pg_engine_in_schema(schema: str) -> Engine:
    assert PG_URL is not None
    admin = make_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    admin.dispose()
    return make_engine(
        PG_URL, connect_args={"options": f"-csearch_path={schema} {PG_TEST_OPTIONS}"}
    )


def _drop_pg_schema(schema: str) -> None:
    assert PG_URL is not None
    admin = make_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    admin.dispose()


SQLITE_WORKER_MODULES = {
    "tests/turns/test_workers.py",
    "tests/turns/test_guarantees.py",
    "tests/turns/test_flow.py",
    "tests/turns/test_flow_races.py",
    "tests/turns/test_hardening.py",
    "tests/turns/test_stated_facts.py",
}
"""The real-worker tests that also run on SQLite: the pipeline's own guarantees, where SQLite's
locking differs. Every other test with real workers (platforms, metrics, the API's streams…)
runs on PostgreSQL alone when it is configured: the database is not its point, and each
doubles the suite's slowest part."""


def _parametrized_by_hand(metafunc: pytest.Metafunc) -> bool:
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0]
        if "db_url" in (names.split(",") if isinstance(names, str) else names):
            return True
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test using ``db_url`` runs once per backend (PostgreSQL alone for most real-worker
    tests, see SQLITE_WORKER_MODULES), unless it parametrizes ``db_url`` itself."""
    if "db_url" not in metafunc.fixturenames or _parametrized_by_hand(metafunc):
        return
    backends = DB_BACKENDS
    module = Path(metafunc.definition.path).relative_to(ROOT).as_posix()
    if {"workers", "live"} & set(metafunc.fixturenames) and module not in SQLITE_WORKER_MODULES:
        backends = DB_BACKENDS[-1:]
    metafunc.parametrize("db_url", backends, indirect=True)


@pytest.fixture
def db_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    """A database URL for one test, empty, on each configured backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'test.db'}"
        return
    schema = f"t_{uuid.uuid4().hex[:12]}"
    eng = _pg_engine_in_schema(schema)
    eng.dispose()
    assert PG_URL is not None
    sep = "&" if "?" in PG_URL else "?"
    yield f"{PG_URL}{sep}options=-csearch_path%3D{schema}%20{PG_TEST_OPTIONS.replace('=', '%3D')}"
    _drop_pg_schema(schema)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """An engine with every nekoflow table created, on SQLite and (when configured) PostgreSQL."""
    eng = make_engine(db_url)
    create_all(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def redis_url() -> str:
    """URL of the test Redis database."""
    return REDIS_URL


@pytest.fixture
def redis_client() -> Iterator[redis.Redis]:
    """A client of the real test Redis; its database is flushed before the test."""
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.exceptions.ConnectionError as exc:  # fail loudly: the suite needs Redis
        pytest.fail(f"Redis is required at {REDIS_URL}: {exc}")
    client.flushdb()
    yield client
    client.close()


@pytest.fixture
def settings(db_url: str) -> Settings:
    """Settings pointing at the test database and the test Redis."""
    return Settings(database_url=db_url, redis_url=REDIS_URL)
