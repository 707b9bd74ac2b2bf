"""Fixtures for turn tests: TurnDeps on the test database with the scripted model."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from nekoflow.channels import CharacterRuntimeContextDispatcher
from nekoflow.events import RecordingEventBus
from nekoflow.llm import ScriptedChatModel
from nekoflow.review.autostate import InMemoryAutoState
from nekoflow.review.pipeline import ReviewPipeline
from nekoflow.settings import Settings
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.deps import TurnDeps
from nekoflow.worldbook.cooldowns import InMemoryCooldowns


class Published(list):
    """Records the turns a TurnDeps asked to publish."""

    def __call__(self, run: TurnRun) -> None:
        self.append(run.turn_id)


@pytest.fixture
def published() -> Published:
    return Published()


@pytest.fixture
def role(engine: Engine) -> Role:
    with Session(engine, expire_on_commit=False) as s:
        r = Role.new(
            "钦灵",
            profile_prompt="你叫钦灵,是一只猫娘。",
            initial_relationship={
                "affection": 50,
                "trust": 50,
                "familiarity": 30,
                "dependency": 30,
                "security": 50,
                "jealousy": 0,
            },
        )
        s.add(r)
        s.commit()
        s.refresh(r)
        return r


@pytest.fixture
def deps(engine: Engine, published: Published, role: Role) -> TurnDeps:
    settings = Settings(database_url=str(engine.url), llm_backoff_base=0.0, llm_backoff_max=0.0)
    bus = RecordingEventBus()
    model = ScriptedChatModel()
    return TurnDeps(
        settings=settings,
        engine=engine,
        chat_model=model,
        review=ReviewPipeline(event_bus=bus, autostate=InMemoryAutoState()),
        cooldowns=InMemoryCooldowns(),
        dispatcher=CharacterRuntimeContextDispatcher(),
        events=bus,
        publish=published,
    )
