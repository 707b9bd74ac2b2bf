"""Fixtures for re-review tests: historical conversations written straight into the dialogue tree,
and real ``celery worker`` processes on the ``review`` queue (the Workers helper of tests/turns)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from nekoflow.settings import Settings, get_settings
from nekoflow.storage import reset_engine
from nekoflow.storage.dialogue import Line, Role, Save
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.characters import DEFAULT_RELATIONSHIP

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def _load_turns_conftest() -> Any:
    """tests/turns/conftest.py as a plain module (for its Workers class and wait_for)."""
    spec = importlib.util.spec_from_file_location(
        "_turns_conftest_shared", REPO / "tests" / "turns" / "conftest.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_shared = _load_turns_conftest()
Workers = _shared.Workers
wait_for = _shared.wait_for


@dataclass
class Convo:
    """Builds one save's dialogue tree line by line (the active leaf follows the last line)."""

    engine: Engine
    role_id: int
    scope_id: str
    save_id: int = 0
    clock: datetime = T0
    last: int | None = None
    ids: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        with Session(self.engine) as s:
            save = Save(
                role_id=self.role_id,
                scope_id=self.scope_id,
                created_at=self.clock,
                updated_at=self.clock,
            )
            s.add(save)
            s.commit()
            assert save.id is not None
            self.save_id = save.id

    def line(
        self,
        attribute: str,
        content: str,
        *,
        after: timedelta = timedelta(seconds=5),
        parent: int | str | None = "leaf",
        role_id: int | str | None = "self",
        turn_id: str | None = None,
        action: str | None = None,
        activate: bool = True,
    ) -> int:
        """Add a line (by default under the active leaf, ``after`` the previous one)."""
        self.clock += after
        rid = (self.role_id if attribute == "assistant" else None) if role_id == "self" else role_id
        with Session(self.engine) as s:
            ln = Line(
                attribute=attribute,
                content=content,
                action_content=action,
                role_id=rid,
                display_name="钦灵" if attribute == "assistant" else "莱姆",
                save_id=self.save_id,
                parent_line_id=self.last if parent == "leaf" else parent,
                turn_id=turn_id,
                created_at=self.clock,
            )
            s.add(ln)
            s.flush()
            assert ln.id is not None
            if activate:
                save = s.get(Save, self.save_id)
                assert save is not None
                save.last_message_id = ln.id
                save.updated_at = self.clock
                s.add(save)
                self.last = ln.id
            s.commit()
            self.ids.append(ln.id)
            return ln.id

    def turn(
        self,
        user: str,
        reply: str,
        *,
        gap: timedelta = timedelta(minutes=1),
        turn_id: str | None = None,
    ) -> int:
        """A user line and one reply line; returns the user line id."""
        uid = self.line("user", user, after=gap, turn_id=turn_id)
        self.line("assistant", reply, turn_id=turn_id)
        return uid


def add_role(engine: Engine, name: str = "钦灵", **initial: int) -> int:
    """A role with the given initial relationship over the defaults."""
    base = dict(DEFAULT_RELATIONSHIP)
    with Session(engine) as s:
        role = Role.new(name, initial_relationship={**base, **initial})
        s.add(role)
        s.commit()
        assert role.id is not None
        return role.id


def add_turn_run(
    engine: Engine, turn_id: str, scope_id: str, *, choice: Any = None, channel: str = "web"
) -> None:
    """A TurnRun whose request metadata records a plot choice."""
    metadata = {"choice": choice} if choice is not None else {}
    with Session(engine) as s:
        s.add(
            TurnRun(
                turn_id=turn_id,
                channel=channel,
                scope_id=scope_id,
                request={"content": "x", "user_id": "u1", "metadata": metadata},
                context={"user_id": "u1"},
            )
        )
        s.commit()


USER_LINES = [
    "你好呀",
    "谢谢你一直陪着我,我相信你",
    "我好喜欢你",
    "今天好无聊,烦死了",
    "我们来约定一件事吧,明天一起去看海,好不好?我已经想了很久很久了,真的很期待和你一起出发",
    "嗯",
    "拜拜",
]


def build_history(engine: Engine, role_id: int, scopes: int = 3, turns: int = 7) -> list[Convo]:
    """Several conversations with keyword hits, gaps of minutes to days, and a dead branch."""
    convos = []
    for k in range(scopes):
        c = Convo(engine, role_id, f"web:user:u{k}")
        for i in range(turns):
            gap = timedelta(minutes=1) if i % 3 else timedelta(days=i % 5 + 1)
            c.turn(USER_LINES[(i + k) % len(USER_LINES)], f"喵~第{i}次回复,好暖", gap=gap)
        convos.append(c)
    return convos


@pytest.fixture
def role_id(engine: Engine) -> int:
    """One character."""
    return add_role(engine)


@pytest.fixture
def cli_env(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """Point nekoflow's process settings and engine at the test database for CLI runs."""
    monkeypatch.setenv("NEKOFLOW_DATABASE_URL", db_url)
    get_settings.cache_clear()
    reset_engine()
    yield get_settings()
    reset_engine()
    get_settings.cache_clear()


worker_env = _shared.worker_env  # the same worker environment as tests/turns


@pytest.fixture
def workers(worker_env: dict[str, str], tmp_path: Path, redis_client: Any) -> Iterator[Any]:
    """Real worker processes (start them with ``workers.start(queues="review")``)."""
    w = Workers(worker_env, tmp_path)
    yield w
    w.stop_all()


def settings_for(db_url: str, **kw: Any) -> Settings:
    """Settings on the test database."""
    return Settings(database_url=db_url, **kw)
