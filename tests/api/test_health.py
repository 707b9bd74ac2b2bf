"""``GET /healthz`` with real and unreachable database, Redis and broker."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from nekoflow.api import create_app
from nekoflow.api.health import uses_redis
from nekoflow.redis_client import make_redis
from nekoflow.settings import Settings
from nekoflow.storage import make_engine

# Port 9 on loopback ("discard") has nothing listening here: connections are refused at once.
DEAD_REDIS = "redis://127.0.0.1:9/0"


def test_all_reachable(client: TestClient) -> None:
    r = client.get("/healthz")
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["status"] == "ok" and data["failing"] == []
    assert set(data["checks"]) == {"database", "redis", "broker", "config"}  # issue 15: config.ini
    assert all(c["ok"] for c in data["checks"].values())
    assert data["checks"]["redis"]["detail"] == "PONG"


def test_broker_unreachable_is_503_naming_it(make_client: Callable[..., TestClient]) -> None:
    client = make_client(broker_url=DEAD_REDIS)
    r = client.get("/healthz")
    assert r.status_code == 503
    data = r.json()
    assert data["status"] == "unavailable" and data["failing"] == ["broker"]
    assert data["checks"]["broker"]["ok"] is False and data["checks"]["broker"]["detail"]
    assert data["checks"]["database"]["ok"] and data["checks"]["redis"]["ok"]


def test_memory_broker_counts_as_reachable(make_client: Callable[..., TestClient]) -> None:
    r = make_client(broker_url="memory://").get("/healthz")
    assert r.status_code == 200
    assert r.json()["checks"]["broker"] == {"ok": True, "detail": "memory"}


@pytest.fixture
def dead_redis() -> Iterator[redis.Redis]:
    client = make_redis(DEAD_REDIS, connect_timeout=1.0, retries=0)
    yield client
    client.close()


def test_redis_unreachable_is_503_naming_it(
    api_settings: Settings, engine, dead_redis: redis.Redis
) -> None:
    app = create_app(api_settings, engine=engine, redis_client=dead_redis)
    with TestClient(app) as client:
        r = client.get("/healthz")
    assert r.status_code == 503
    assert r.json()["failing"] == ["redis"]
    assert "ConnectionError" in r.json()["checks"]["redis"]["detail"]


def test_database_unreachable_is_503_naming_it(
    api_settings: Settings, redis_client: redis.Redis
) -> None:
    engine = make_engine(
        "postgresql://postgres@127.0.0.1:9/none", connect_args={"connect_timeout": 2}
    )
    settings = api_settings.model_copy(update={"broker_url": "memory://"})
    app = create_app(settings, engine=engine, redis_client=redis_client)
    with TestClient(app) as client:
        r = client.get("/healthz")
        listed = client.get("/api/world-books")
    engine.dispose()
    assert r.status_code == 503 and r.json()["failing"] == ["database"]
    assert r.json()["checks"]["database"]["ok"] is False
    # the world-book routes answer 503 too, not 500
    assert listed.status_code == 503 and listed.json()["error"] == "database unavailable"


def test_several_failures_are_all_named(
    api_settings: Settings, engine, dead_redis: redis.Redis
) -> None:
    settings = api_settings.model_copy(update={"broker_url": DEAD_REDIS})
    with TestClient(create_app(settings, engine=engine, redis_client=dead_redis)) as client:
        r = client.get("/healthz")
    assert r.status_code == 503 and r.json()["failing"] == ["redis", "broker"]


def test_redis_not_used_is_reported_ok(engine) -> None:
    settings = Settings(
        database_url="sqlite://",
        redis_url=DEAD_REDIS,
        broker_url="memory://",
        cooldown_backend="memory",
        event_bus="memory",
        autostate_backend="memory",
    )
    assert not uses_redis(settings)
    with TestClient(create_app(settings, engine=engine)) as client:
        r = client.get("/healthz")
    assert r.status_code == 200
    assert r.json()["checks"]["redis"] == {"ok": True, "detail": "not used"}


def test_redis_is_used_when_the_broker_or_a_backend_is_redis() -> None:
    assert uses_redis(Settings(broker_url="redis://x:6379/0"))
    memory = {"broker_url": "memory://", "cooldown_backend": "memory"}
    assert uses_redis(Settings(**memory, event_bus="redis"))
    assert uses_redis(Settings(**memory, autostate_backend="redis"))
    assert uses_redis(Settings(broker_url="memory://", cooldown_backend="redis"))
