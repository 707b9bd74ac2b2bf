"""``POST /api/world-books/test-match`` lists matched-but-dropped entries with the reason, and uses
the turn's budgets (from the settings) when no config is given."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy.engine import Engine

from nekoflow.api.app import create_app
from nekoflow.settings import Settings
from nekoflow.worldbook.redis_cooldowns import RedisCooldowns
from nekoflow.worldbook.store import WorldBookStore

URL = "/api/world-books/test-match"


@pytest.fixture
def client(settings: Settings, engine: Engine, redis_client: redis.Redis) -> Iterator[TestClient]:
    store = WorldBookStore(engine)
    store.create(
        "Eldoria",
        id="eldoria",
        entries=[
            {"id": "forest", "keywords": ["forest"], "content": "f" * 1551, "priority": 9},
            {"id": "glade", "keywords": ["forest"], "content": "g" * 954},
            {"id": "never", "keywords": ["forest"], "content": "n", "rules": {"probability": 0}},
        ],
    )
    small = settings.model_copy(
        update={
            "llm_context_window": 2000,
            "lore_budget_share": 0.25,
            "api_token": SecretStr("test-match-token"),
        }
    )
    with TestClient(create_app(small, engine=engine, redis_client=redis_client)) as c:
        c.headers["Authorization"] = "Bearer test-match-token"  # test-match needs the token
        yield c


def test_dropped_entries_with_reasons_under_the_turn_budgets(client: TestClient) -> None:
    body = client.post(URL, json={"message": "Tell me about the forest"}).json()
    # 2,000 x 25% = 500 tokens; the char budgets stay the seed's (3,000 total / 1,200 keyword):
    # the 1,551-char entry is longer than its whole class budget and first in line: cut to fit.
    assert [(m["entry_id"], m.get("cut_to")) for m in body["matches"]] == [("forest", 1200)]
    dropped = {d["entry_id"]: d for d in body["dropped"]}
    assert dropped["never"]["reason"] == "probability"
    assert dropped["glade"]["reason"] == "over_budget"
    assert dropped["glade"]["needed"] == 954 and dropped["glade"]["unit"] == "chars"
    assert "regex_timeouts" not in body


def test_explicit_seed_config_skips_the_long_entry(client: TestClient) -> None:
    body = client.post(URL, json={"message": "forest", "config": {}}).json()
    assert [m["entry_id"] for m in body["matches"]] == ["glade"]
    reasons = {d["entry_id"]: (d["reason"], d.get("needed")) for d in body["dropped"]}
    assert reasons == {"forest": ("over_budget", 1551), "never": ("probability", None)}


def test_scope_reads_its_cooldowns_from_redis(
    client: TestClient, settings: Settings, redis_client: redis.Redis
) -> None:
    RedisCooldowns(redis_client, prefix=settings.redis_prefix).record("web:9", "t1", ["forest"])
    engine = client.app.state.nekoflow.engine  # type: ignore[attr-defined]
    WorldBookStore(engine).update_entry("eldoria", "forest", cooldown_turns=2)
    body = client.post(URL, json={"message": "forest", "scope_id": "web:9"}).json()
    assert "forest" not in [m["entry_id"] for m in body["matches"]]
    assert {"entry_id": "forest", "reason": "cooldown"}.items() <= body["dropped"][0].items()
    free = client.post(URL, json={"message": "forest", "scope_id": "web:other"}).json()
    assert [m["entry_id"] for m in free["matches"]] == ["forest"]
