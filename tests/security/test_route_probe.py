"""The route probe: every route of the app (OpenAPI, the hidden runs pages and the webhook
routers) called without credentials, with real ids in its path; a route that answers 2xx must be
in ``PUBLIC_ROUTES``, which the README's "Security" section lists word for word."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient
from sqlmodel import Session

from nekoflow.api.bodies import leaf_routes
from nekoflow.api.public import PUBLIC_ROUTES
from nekoflow.platforms.onebot.settings import OneBotBot, OneBotSettings
from nekoflow.platforms.qqbot.settings import QQBot, QQBotSettings
from nekoflow.platforms.telegram.settings import TelegramBot, TelegramSettings
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import MemoryRecord
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.runner import run_inline
from nekoflow.worldbook.store import WorldBookStore
from tests.api.conftest import web_event
from tests.security.webhook_settings import feishu_settings

README = Path(__file__).resolve().parents[2] / "README.md"


def _configure_webhooks(client: TestClient) -> None:
    state = client.app.state  # type: ignore[attr-defined]
    state.onebot_settings = OneBotSettings(
        bots=[OneBotBot(self_id="5", mode="http", http_api_url="http://ob:1", secret="s")]
    )
    state.qqbot_settings = QQBotSettings(bots=[QQBot(name="neko", app_id="1", secret="qq-s")])
    state.feishu_settings = feishu_settings()
    state.telegram_settings = TelegramSettings(
        bots=[TelegramBot(name="neko", token="1:x", mode="webhook", secret_token="tg")]
    )


def test_no_route_answers_data_without_the_token(
    make_client: Callable[..., TestClient],
    auth: dict[str, str],
    turn_deps: TurnDeps,
    character: Role,
    engine,  # type: ignore[no-untyped-def]
) -> None:
    client = make_client(turn_deps=turn_deps)
    _configure_webhooks(client)
    r = client.post("/api/turns", json={"channel": "web", "event": web_event("你好")}, headers=auth)
    turn_id = r.json()["turn_id"]
    assert run_inline(turn_deps, turn_id, sleep=False) == "ok"
    WorldBookStore(engine).create("lore", id="lore", entries=[{"id": "e1", "keywords": ["k"]}])
    with Session(engine) as s:
        memory_id = s.query(MemoryRecord.id).first()
    ids = {
        "turn_id": turn_id,
        "book_id": "lore",
        "entry_id": "e1",
        "memory_id": str(memory_id[0] if memory_id else 1),
        "bot": "neko",
        "app": "neko",
    }
    anonymous = TestClient(client.app, raise_server_exceptions=False)
    probed, leaks = [], []
    for route in leaf_routes(client.app.routes):
        path = getattr(route, "path", None)
        for method in sorted(getattr(route, "methods", None) or ()):
            if method in ("HEAD", "OPTIONS"):
                continue
            url = re.sub(r"\{(\w+)(:[^}]*)?\}", lambda m: ids.get(m.group(1), "x"), path)
            if "/events" in url:
                url += "?timeout=1"
            answer = anonymous.request(method, url, json={}, follow_redirects=False)
            probed.append((method, path, answer.status_code))
            if 200 <= answer.status_code < 300 and (method, path) not in PUBLIC_ROUTES:
                leaks.append((method, path, answer.status_code, answer.text[:120]))
            assert answer.status_code < 500, (method, url, answer.text[:200])
    assert not leaks, leaks
    assert len(probed) > 30 and {p for _, p, _ in probed} >= {
        "/api/turns/{turn_id}",
        "/runs",
        "/webhooks/onebot",
        "/webhooks/qqbot/{bot}",
        "/api/memories",
    }
    assert turn_id not in "".join(str(p) for p in probed)


def test_the_readme_lists_exactly_the_public_routes() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Security", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`(GET|POST) (/[^`]*)`", section))
    assert listed == set(PUBLIC_ROUTES), listed ^ set(PUBLIC_ROUTES)
