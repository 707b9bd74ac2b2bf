"""Fixtures for turn tests: TurnDeps on the test database with the scripted model."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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
from tests.conftest import XDIST_WORKER


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


# --- real Celery workers ------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]


class Workers:
    """Starts real ``celery worker`` processes against the test broker and database."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env = env
        self.log_dir = log_dir
        self.procs: list[subprocess.Popen] = []

    def start(
        self,
        *,
        app: str = "tasks",
        queues: str = "turns,llm,outbound",
        concurrency: int = 2,
        beat: bool = False,
        extra_env: dict[str, str] | None = None,
        name: str | None = None,
        pool: str = "prefork",
    ) -> subprocess.Popen:
        name = name or f"w{len(self.procs)}"
        log = self.log_dir / f"{name}.log"
        cmd = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            app,
            "worker",
            "-Q",
            queues,
            "-c",
            str(concurrency),
            "-P",
            pool,
            "-n",
            f"{name}{XDIST_WORKER}@%h",  # node names (pidbox queues) are broker-wide
            "-l",
            "INFO",
            "--without-gossip",
            "--without-mingle",
            "-E",
        ]
        if beat:
            cmd += ["-B", "-s", str(self.log_dir / f"{name}-beat-schedule")]
        proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            env={**self.env, **(extra_env or {})},
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(proc)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if "ready." in log.read_text(errors="replace"):
                return proc
            if proc.poll() is not None:
                raise RuntimeError(f"worker {name} exited:\n{log.read_text()[-3000:]}")
            time.sleep(0.1)
        raise RuntimeError(f"worker {name} not ready:\n{log.read_text()[-3000:]}")

    def kill(self, proc: subprocess.Popen) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=10)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    self.kill(proc)

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-4000:] for p in self.log_dir.glob("*.log"))


@pytest.fixture
def worker_env(db_url: str, redis_url: str, tmp_path: Path) -> dict[str, str]:
    """Environment of worker processes: the test database, the test Redis as result backend and
    broker (or RabbitMQ as broker when NEKOFLOW_TEST_BROKER_URL is set)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env.update(
        NEKOFLOW_DATABASE_URL=db_url,
        NEKOFLOW_REDIS_URL=redis_url,
        NEKOFLOW_BROKER_URL=os.environ.get("NEKOFLOW_TEST_BROKER_URL") or redis_url,
        NEKOFLOW_RESULT_BACKEND=redis_url,
        NEKOFLOW_REDIS_PREFIX=f"nftest{XDIST_WORKER}",  # pub/sub channels span databases
        NEKOFLOW_LLM_BACKOFF_BASE="0.05",
        NEKOFLOW_LLM_BACKOFF_MAX="0.2",
        NEKOFLOW_RUNTIME_CONFIG_PATH=str(tmp_path / "absent-config.ini"),
        PYTHONPATH=str(REPO),
    )
    return env


@pytest.fixture
def workers(worker_env: dict[str, str], tmp_path: Path) -> Iterator[Workers]:
    w = Workers(worker_env, tmp_path)
    yield w
    w.stop_all()


@pytest.fixture
def live(
    worker_env: dict[str, str], engine: Engine, redis_client, role: Role
) -> Iterator[TurnDeps]:
    """This process set up as an enqueuer: TurnDeps on the test DB publishing to the test broker."""
    from tasks import app
    from tasks.runtime import set_deps
    from tasks.turns import publish_turn

    settings = Settings(
        **{
            k[len("NEKOFLOW_") :].lower(): v
            for k, v in worker_env.items()
            if k.startswith("NEKOFLOW_")
        }
    )
    assert app.conf.broker_url == settings.broker_url, "tests/conftest.py sets the broker"
    deps = TurnDeps.from_settings(settings, engine=engine, publish=publish_turn)
    set_deps(deps)
    yield deps
    set_deps(None)


def wait_for(
    predicate: Callable[[], bool], timeout: float, what: str, logs: Callable[[], str]
) -> None:
    """Poll ``predicate`` until true; fail with the workers' logs after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}\n{logs()}")


# --- the loopback Telegram Bot API ---------------------------------------------------------


@pytest.fixture
def bot_api() -> Iterator[Any]:
    """The loopback Telegram Bot API (as ``fake_tg`` of the Telegram tests)."""
    from tests.platforms.telegram import conftest as telegram
    from tests.platforms.telegram.fake_botapi import FakeBotApi

    fake = FakeBotApi({telegram.TOKEN})
    yield fake
    fake.close()


@pytest.fixture
def tg(bot_api: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """NEKOFLOW_TELEGRAM_* for one bot at the fake (as ``tg_env`` of the Telegram tests)."""
    from tests.platforms.telegram import conftest as telegram

    env = {
        "NEKOFLOW_TELEGRAM_API_BASE_URL": bot_api.url,
        "NEKOFLOW_TELEGRAM_TOKEN": telegram.TOKEN,
        "NEKOFLOW_TELEGRAM_SECRET_TOKEN": telegram.SECRET,
        "NEKOFLOW_TELEGRAM_MODE": "webhook",
        "NEKOFLOW_TELEGRAM_BOT_NAME": "neko",
        "NEKOFLOW_TELEGRAM_TIMEOUT": "5",
        "NEKOFLOW_DELIVERY_BACKOFF_BASE": "0.05",
        "NEKOFLOW_DELIVERY_BACKOFF_MAX": "0.2",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    telegram.reset_caches()
    yield env
    telegram.reset_caches()
