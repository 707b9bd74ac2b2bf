"""Fixtures for API tests: the real app on the test database (SQLite and PostgreSQL) and Redis.

``client`` is a TestClient of ``create_app`` with the ``engine`` fixture, the real test Redis
(also the Celery broker) and a configured bearer token; ``auth`` holds its header.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from pydantic import SecretStr
from pytest_httpserver import HTTPServer
from sqlalchemy.engine import Engine
from sqlmodel import Session

from nekoflow.api import create_app
from nekoflow.channels import CharacterRuntimeContextDispatcher
from nekoflow.llm import ChatModel, OpenAIChatModel, ScriptedChatModel
from nekoflow.review.autostate import InMemoryAutoState
from nekoflow.review.pipeline import ReviewPipeline
from nekoflow.settings import Settings
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.runner import run_inline
from nekoflow.worldbook.cooldowns import InMemoryCooldowns

TOKEN = "test-token-0123456789"


@pytest.fixture
def auth() -> dict[str, str]:
    """The Authorization header the test app accepts."""
    return {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def api_settings(settings: Settings, redis_url: str) -> Settings:
    """Test database + test Redis (also the broker), with the API token set."""
    return settings.model_copy(
        update={"api_token": SecretStr(TOKEN), "broker_url": redis_url, "redis_url": redis_url}
    )


@pytest.fixture
def make_client(
    api_settings: Settings, engine: Engine, redis_client: redis.Redis
) -> Iterator[Callable[..., TestClient]]:
    """Build a TestClient for an app on the test engine/Redis; keyword args override settings."""
    clients: list[TestClient] = []

    def build(
        *, chat_model: ChatModel | None = None, turn_deps: TurnDeps | None = None, **overrides: Any
    ) -> TestClient:
        settings = api_settings.model_copy(update=overrides) if overrides else api_settings
        app = create_app(
            settings,
            engine=engine,
            redis_client=redis_client,
            chat_model=chat_model,
            turn_deps=turn_deps,
        )
        client = TestClient(app)
        client.__enter__()
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client: Callable[..., TestClient]) -> TestClient:
    """The test app with default test settings."""
    return make_client()


# ------------------------------------------------------------------ a loopback OpenAI server

CHAT_PATH = "/v1/chat/completions"


def completion(content: str, model: str = "loopback-model") -> dict[str, Any]:
    """An OpenAI chat-completions response body whose reply is ``content``."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
    }


GENERATED = {
    "entries": [
        {
            "name": "火种仪式",
            "keywords": ["火种", "仪式"],
            "content": "火种仪式是翁法罗斯每个循环开始时的典礼。",
            "match_mode": "any",
            "priority": 60,
            "entry_type": "event",
            "trigger_sources": ["user", "history"],
            "tags": ["翁法罗斯"],
        },
        {
            "name": "观星塔",
            "keywords": "观星塔, 星图",
            "content": "观星塔在白塔之顶,可以看到整片星海。",
            "priority": 40,
            "entry_type": "location",
            "comment": "an unknown key the model added",
        },
    ]
}


@pytest.fixture
def llm_server(httpserver: HTTPServer) -> HTTPServer:
    """pytest-httpserver speaking chat-completions; tests register the reply."""
    return httpserver


@pytest.fixture
def openai_model(llm_server: HTTPServer) -> OpenAIChatModel:
    """An OpenAIChatModel talking to :func:`llm_server` (short timeouts)."""
    return OpenAIChatModel(
        base_url=llm_server.url_for("/v1"), model="loopback-model", timeout=5, connect_timeout=2
    )


@pytest.fixture
def llm_reply(llm_server: HTTPServer) -> Callable[[str], None]:
    """Make every chat-completions call to the loopback server answer the given text."""

    def reply(content: str) -> None:
        llm_server.expect_request(CHAT_PATH, method="POST").respond_with_json(completion(content))

    return reply


@pytest.fixture
def generated_json() -> str:
    """A model reply with two valid entries (one with a keywords string and an unknown key)."""
    return json.dumps(GENERATED, ensure_ascii=False)


# ------------------------------------------------------------------------------------ turns


def add_character(engine: Engine) -> Role:
    """Store the character the dispatcher picks for every turn (the only one stored)."""
    with Session(engine, expire_on_commit=False) as s:
        role = Role.new("钦灵", profile_prompt="你叫钦灵,是一只猫娘。")
        s.add(role)
        s.commit()
        s.refresh(role)
        return role


@pytest.fixture
def character(engine: Engine) -> Role:
    """The test database's one character."""
    return add_character(engine)


class Publisher:
    """A TurnDeps publisher for tests: records turn ids and, when ``inline``, runs the turn."""

    def __init__(self) -> None:
        self.turn_ids: list[str] = []
        self.inline = False
        self.deps: TurnDeps | None = None

    def __call__(self, run: TurnRun) -> None:
        self.turn_ids.append(run.turn_id)
        if self.inline:
            assert self.deps is not None
            run_inline(self.deps, run.turn_id, sleep=False)


@pytest.fixture
def publisher() -> Publisher:
    """Records what the turn deps publish (``publisher.inline = True`` runs turns in process)."""
    return Publisher()


def scripted_turn_deps(settings: Settings, engine: Engine, publisher: Publisher) -> TurnDeps:
    """TurnDeps on ``engine`` with the scripted model and in-memory state, publishing to
    ``publisher`` (which gets them, to run turns inline)."""
    deps = TurnDeps(
        settings=settings,
        engine=engine,
        chat_model=ScriptedChatModel(),
        review=ReviewPipeline(autostate=InMemoryAutoState()),
        cooldowns=InMemoryCooldowns(),
        dispatcher=CharacterRuntimeContextDispatcher(),
        publish=publisher,
    )
    publisher.deps = deps
    return deps


@pytest.fixture
def turn_deps(api_settings: Settings, engine: Engine, publisher: Publisher) -> TurnDeps:
    """TurnDeps on the test database with the scripted model, publishing to :func:`publisher`."""
    return scripted_turn_deps(api_settings, engine, publisher)


@pytest.fixture
def turn_client(
    make_client: Callable[..., TestClient], turn_deps: TurnDeps, character: Role
) -> TestClient:
    """The test app submitting turns through :func:`turn_deps` (no broker involved)."""
    return make_client(turn_deps=turn_deps)


def web_event(text: str, session: str = "s1", **extra: Any) -> dict[str, Any]:
    """A Web-session chat message."""
    return {"session_id": session, "message": text, "user_id": "u1", "display_name": "莱姆"} | extra


def read_events(
    client: TestClient, url: str, headers: dict[str, str] | None = None
) -> list[tuple[str, dict]]:
    """Read a server-sent-event stream to its end: ``[(event, data), …]`` (a read: send the
    token in ``headers`` unless the app has public reads)."""
    events: list[tuple[str, dict]] = []
    with client.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        name = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[len("data: ") :])))
    return events
