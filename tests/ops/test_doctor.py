"""``nekoflow doctor`` and ``GET /healthz?deep=1``: each misconfiguration of the issue reported in
one line naming the fix, against the real Redis/PostgreSQL, real workers and loopback fakes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from pydantic import SecretStr

from nekoflow.doctor import platforms as doctor_platforms
from nekoflow.doctor import probes
from nekoflow.doctor.rules import (
    Check,
    beat_alive,
    lease_coherence,
    queue_consumers,
    routed_queues,
    webhook_registered,
)
from nekoflow.doctor.runner import run_checks
from nekoflow.platforms.feishu.settings import get_feishu_settings
from nekoflow.platforms.qqbot.settings import get_qqbot_settings
from nekoflow.platforms.telegram.settings import get_telegram_settings
from nekoflow.settings import Settings
from tests.platforms.feishu.fake_feishu import FakeFeishu
from tests.platforms.qqbot.fake_qq import FakeQQ
from tests.platforms.telegram.fake_botapi import FakeBotApi
from tests.turns.llm_server import FakeLLM, completion

REPO = Path(__file__).resolve().parents[2]
CLOSED = "127.0.0.1:9"  # loopback "discard": nothing listens, connections are refused at once
GOOD_TOKEN = "123456:good-token"


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


# --- pure decisions ---------------------------------------------------------------------------


def test_check_lines() -> None:
    assert Check("redis", True, "PONG").line() == "✓ redis: PONG"
    bad = Check("redis", False, "refused", "start Redis or correct NEKOFLOW_REDIS_URL")
    assert bad.line() == "✗ redis: refused — fix: start Redis or correct NEKOFLOW_REDIS_URL"


def test_a_long_error_is_cut_visibly() -> None:
    """A configuration error longer than a line ends in "…", not mid-word as if complete."""
    long = probes.short(ValueError("NEKOFLOW_LLM_API_KEY: required " + "x" * 300))
    assert len(long) == 200 and long.endswith("…")
    assert probes.short(ValueError("short")) == "ValueError: short"


def test_every_routed_queue_is_checked() -> None:
    import celeryconfig

    queues = routed_queues(celeryconfig.task_default_queue, celeryconfig.task_routes)
    assert {"turns", "llm", "outbound", "memory", "review"} <= set(queues)


def test_queue_without_consumer_names_the_worker_command() -> None:
    active = {"w1@h": [{"name": "turns"}, {"name": "llm"}]}
    checks = by_name(queue_consumers(["turns", "llm", "memory", "review"], active))
    assert checks["queue turns"].ok and "w1@h" in checks["queue turns"].detail
    assert not checks["queue memory"].ok
    assert "celery -A nekoflow.worker worker -Q memory" in checks["queue memory"].fix
    assert checks["queue review"].ok  # optional: only bulk re-review uses it
    assert all(not c.ok for c in queue_consumers(["turns"], None))


def test_speech_queue_needs_a_consumer_only_with_voice_on() -> None:
    from nekoflow.doctor.rules import OPTIONAL_QUEUES, SPEECH_OFF

    active = {"w1@h": [{"name": "turns"}]}
    off = by_name(queue_consumers(["speech"], active, OPTIONAL_QUEUES | SPEECH_OFF))
    assert off["queue speech"].ok and "voice replies are off" in off["queue speech"].detail
    on = by_name(queue_consumers(["speech"], active, OPTIONAL_QUEUES))
    assert not on["queue speech"].ok and "-Q speech" in on["queue speech"].fix


def test_beat_freshness() -> None:
    assert beat_alive(None, 1000.0, 30).ok is False
    assert "celery -A nekoflow.worker beat" in beat_alive(None, 1000.0, 30).fix
    assert beat_alive(990.0, 1000.0, 30).ok
    stale = beat_alive(800.0, 1000.0, 30)
    assert not stale.ok and "200 s ago" in stale.detail


def lease(**overrides: Any) -> Check:
    values = dict(
        turn_lease=300.0,
        llm_lease=30.0,
        llm_timeout=60.0,
        sweep_interval=30.0,
        visibility_timeout=3600.0,
        uses_redis_broker=True,
    )
    return lease_coherence(**(values | overrides))


def test_incoherent_leases_name_the_setting() -> None:
    assert lease().ok
    assert "NEKOFLOW_BROKER_VISIBILITY_TIMEOUT" in lease(visibility_timeout=45.0).fix
    assert lease(visibility_timeout=45.0, uses_redis_broker=False).ok  # RabbitMQ: no such thing
    assert "NEKOFLOW_SWEEP_INTERVAL_SECONDS" in lease(sweep_interval=600.0).fix
    assert "NEKOFLOW_LLM_LEASE_SECONDS" in lease(llm_lease=400.0).fix


def test_webhook_decisions() -> None:
    url = "https://bot.example/webhooks/telegram/default"
    assert webhook_registered("default", url, {"url": url}).ok
    other = webhook_registered("default", url, {"url": ""})
    assert not other.ok and "--set-webhook" in other.fix
    failing = webhook_registered("default", url, {"url": url, "last_error_message": "timeout"})
    assert not failing.ok and "timeout" in failing.detail
    assert "NEKOFLOW_TELEGRAM_PUBLIC_URL" in webhook_registered("default", None, {}).fix


# --- services: the real Redis and database ----------------------------------------------------


def test_database_redis_broker_and_leases_ok(settings: Settings, engine, redis_url: str) -> None:
    s = settings.model_copy(update={"redis_url": redis_url, "broker_url": redis_url})
    s = Settings(**{**s.model_dump(), "redis_url": redis_url})  # redis_url explicitly set
    client = probes.redis_client(s, 2.0)
    try:
        assert probes.database(s, 2.0).ok, probes.database(s, 2.0).line()
        assert probes.redis_ping(s, client).ok
        assert probes.broker(s, 2.0).ok
        assert probes.leases(s).ok
    finally:
        client.close()


def test_database_without_schema_says_how_to_create_it(tmp_path: Path) -> None:
    (tmp_path / "empty.db").touch()
    s = Settings(database_url=f"sqlite:///{tmp_path / 'empty.db'}")
    check = probes.database(s, 2.0)
    assert not check.ok and "no nekoflow tables" in check.detail and "schema" in check.fix
    absent = probes.database(Settings(database_url=f"sqlite:///{tmp_path / 'no.db'}"), 2.0)
    assert not absent.ok and "NEKOFLOW_DATABASE_URL" in absent.fix
    assert not (tmp_path / "no.db").exists()  # the check created nothing


def test_redis_down_is_one_line_naming_the_setting(settings: Settings) -> None:
    dead = f"redis://{CLOSED}/0"
    s = Settings(database_url=settings.database_url, redis_url=dead, broker_url=dead)
    checks = by_name(run_checks(s, timeout=1.0))
    assert not checks["redis"].ok and "NEKOFLOW_REDIS_URL" in checks["redis"].fix
    assert not checks["broker"].ok and "NEKOFLOW_BROKER_URL" in checks["broker"].fix
    assert CLOSED in checks["redis"].detail


def test_incoherent_lease_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEKOFLOW_BROKER_VISIBILITY_TIMEOUT", "30")
    monkeypatch.setenv("NEKOFLOW_REDIS_URL", "redis://127.0.0.1:6379/0")
    check = probes.leases(Settings())
    assert not check.ok and "NEKOFLOW_BROKER_VISIBILITY_TIMEOUT" in check.fix


def test_sweep_records_beat_in_redis(redis_url: str, redis_client: redis.Redis) -> None:
    s = Settings(redis_url=redis_url, redis_prefix="nftest-doctor")
    assert not probes.beat(s, redis_client).ok
    probes.record_sweep(s)
    assert probes.beat(s, redis_client).ok


# --- the model: a loopback OpenAI-compatible server -------------------------------------------


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM(lambda body, n: (200, completion("喵"), {}, 0.0)) as fake:
        yield fake


def test_model_answers_and_reports_stream_usage(llm: FakeLLM) -> None:
    s = Settings(llm_base_url=llm.base_url, llm_model="tiny")  # provider inferred
    checks = by_name(probes.model(s))
    assert checks["model"].ok, checks["model"].line()
    assert "openai (inferred from NEKOFLOW_LLM_BASE_URL)" in checks["model"].detail
    assert "127.0.0.1" in checks["model"].detail and "model tiny" in checks["model"].detail
    assert checks["model streaming"].ok
    assert llm.calls[0]["max_tokens"] == 1 and llm.calls[1]["stream"] is True


def test_stream_without_usage_is_reported() -> None:
    no_usage = {k: v for k, v in completion("喵").items() if k != "usage"}
    with FakeLLM(lambda body, n: (200, no_usage, {}, 0.0)) as fake:
        checks = by_name(probes.model(Settings(llm_base_url=fake.base_url)))
    assert checks["model"].ok
    assert not checks["model streaming"].ok
    assert "include_usage" in checks["model streaming"].fix


def test_model_server_down_names_host_and_setting() -> None:
    s = Settings(llm_base_url=f"http://{CLOSED}/v1", llm_connect_timeout=1, llm_max_attempts=1)
    (check,) = probes.model(s)
    assert not check.ok and CLOSED in check.detail
    assert "NEKOFLOW_LLM_BASE_URL" in check.fix


def test_scripted_model_only_passes_when_chosen() -> None:
    (inferred,) = probes.model(Settings())
    assert not inferred.ok and "NEKOFLOW_LLM_BASE_URL" in inferred.fix
    (chosen,) = probes.model(Settings(llm_provider="scripted"))
    assert chosen.ok


# --- platform bots: loopback fakes ------------------------------------------------------------


@pytest.fixture
def platform_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for getter in (get_telegram_settings, get_qqbot_settings, get_feishu_settings):
        getter.cache_clear()
    yield monkeypatch
    monkeypatch.undo()
    for getter in (get_telegram_settings, get_qqbot_settings, get_feishu_settings):
        getter.cache_clear()


def test_telegram_wrong_token_names_the_setting(platform_env: pytest.MonkeyPatch) -> None:
    fake = FakeBotApi({GOOD_TOKEN})
    try:
        platform_env.setenv("NEKOFLOW_TELEGRAM_API_BASE_URL", fake.url)
        platform_env.setenv("NEKOFLOW_TELEGRAM_TOKEN", "123456:wrong-token")
        (check,) = doctor_platforms.telegram(2.0)
        assert not check.ok and "401" in check.detail
        assert "NEKOFLOW_TELEGRAM_TOKEN" in check.fix and "wrong-token" not in check.line()
        get_telegram_settings.cache_clear()
        platform_env.setenv("NEKOFLOW_TELEGRAM_TOKEN", GOOD_TOKEN)
        (check,) = doctor_platforms.telegram(2.0)
        assert check.ok and "@nekobot" in check.detail
    finally:
        fake.close()


def test_bad_platform_settings_are_named(platform_env: pytest.MonkeyPatch) -> None:
    platform_env.setenv("NEKOFLOW_FEISHU_APP_ID", "cli_a1")
    platform_env.setenv("NEKOFLOW_FEISHU_APP_SECRET", "a-secret-value")
    (check,) = doctor_platforms.feishu(2.0)
    assert not check.ok and "verification_token is required" in check.detail
    assert "a-secret-value" not in check.line()


def test_telegram_webhook_registration(platform_env: pytest.MonkeyPatch) -> None:
    fake = FakeBotApi({GOOD_TOKEN})
    try:
        for name, value in {
            "API_BASE_URL": fake.url,
            "TOKEN": GOOD_TOKEN,
            "MODE": "webhook",
            "SECRET_TOKEN": "s3cret",
            "PUBLIC_URL": "https://bot.example",
        }.items():
            platform_env.setenv(f"NEKOFLOW_TELEGRAM_{name}", value)
        checks = by_name(doctor_platforms.telegram(2.0))
        assert checks["telegram default"].ok
        assert not checks["telegram default webhook"].ok
        assert "--set-webhook" in checks["telegram default webhook"].fix
        url = "https://bot.example/webhooks/telegram/default"
        fake.state.webhook_url = url
        assert by_name(doctor_platforms.telegram(2.0))["telegram default webhook"].ok
    finally:
        fake.close()


def test_qqbot_and_feishu_secrets(platform_env: pytest.MonkeyPatch) -> None:
    qq = FakeQQ("1020", "qq-secret")
    feishu = FakeFeishu("cli_a1", "fs-secret")
    try:
        platform_env.setenv("NEKOFLOW_QQBOT_TOKEN_URL", qq.token_url)
        platform_env.setenv("NEKOFLOW_QQBOT_APP_ID", "1020")
        platform_env.setenv("NEKOFLOW_QQBOT_SECRET", "wrong")
        platform_env.setenv("NEKOFLOW_FEISHU_API_BASE_URL", feishu.url)
        platform_env.setenv("NEKOFLOW_FEISHU_APP_ID", "cli_a1")
        platform_env.setenv("NEKOFLOW_FEISHU_APP_SECRET", "wrong")
        platform_env.setenv("NEKOFLOW_FEISHU_VERIFICATION_TOKEN", "v" * 32)
        (qq_check,) = doctor_platforms.qqbot(2.0)
        (fs_check,) = doctor_platforms.feishu(2.0)
        assert not qq_check.ok and "NEKOFLOW_QQBOT_SECRET" in qq_check.fix
        assert not fs_check.ok and "NEKOFLOW_FEISHU_APP_SECRET" in fs_check.fix
        get_qqbot_settings.cache_clear()
        get_feishu_settings.cache_clear()
        platform_env.setenv("NEKOFLOW_QQBOT_SECRET", "qq-secret")
        platform_env.setenv("NEKOFLOW_FEISHU_APP_SECRET", "fs-secret")
        assert [c.ok for c in doctor_platforms.qqbot(2.0)] == [True]
        assert [c.ok for c in doctor_platforms.feishu(2.0)] == [True]
    finally:
        qq.close()
        feishu.close()


# --- real workers: queue consumers and beat ---------------------------------------------------


def env_settings(env: dict[str, str]) -> Settings:
    """The Settings the worker processes read from ``env``."""
    return Settings(
        **{k[len("NEKOFLOW_") :].lower(): v for k, v in env.items() if k.startswith("NEKOFLOW_")}
    )


def test_queue_without_consumer_and_beat(
    workers, worker_env: dict[str, str], redis_client: redis.Redis
) -> None:
    s = env_settings(worker_env)
    workers.start(queues="turns,llm,outbound")
    checks = by_name(probes.consumers(s, 3.0))
    assert checks["queue turns"].ok and checks["queue llm"].ok, checks
    memory = checks["queue memory"]
    assert not memory.ok and "-Q memory" in memory.fix
    assert not probes.beat(s, redis_client).ok  # no beat: the sweeper never ran

    extra = {"NEKOFLOW_SWEEP_INTERVAL_SECONDS": "1"}
    workers.start(queues="memory", beat=True, extra_env=extra, name="beat")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not probes.beat(s, redis_client).ok:
        time.sleep(0.2)
    assert probes.beat(s, redis_client).ok, workers.logs()
    assert by_name(probes.consumers(s, 3.0))["queue memory"].ok


# --- the shells: CLI and /healthz?deep=1 ------------------------------------------------------


def test_cli_exits_non_zero_with_one_line_per_problem(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env |= {
        "NEKOFLOW_DATABASE_URL": f"sqlite:///{tmp_path / 'n.db'}",
        "NEKOFLOW_REDIS_URL": f"redis://{CLOSED}/0",
    }
    cmd = [sys.executable, "-m", "nekoflow", "doctor", "--timeout", "1"]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = {line.split(":")[0]: line for line in done.stdout.splitlines()}
    assert "NEKOFLOW_REDIS_URL" in lines["✗ redis"]
    assert "NEKOFLOW_LLM_BASE_URL" in lines["✗ model"]
    assert "problem(s)" in done.stderr
    as_json = subprocess.run(
        [*cmd, "--json"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    data = {c["name"]: c for c in json.loads(as_json.stdout)}
    assert data["redis"]["ok"] is False and "NEKOFLOW_REDIS_URL" in data["redis"]["fix"]


def test_deep_healthz_needs_the_token(
    make_api_client, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = make_api_client(llm_base_url=llm.base_url, broker_visibility_timeout=30)
    assert client.get("/healthz?deep=1").status_code == 401
    wrong = {"Authorization": "Bearer not-the-token"}
    assert client.get("/healthz?deep=1", headers=wrong).status_code == 401
    assert client.get("/healthz").status_code == 200  # the shallow check stays open
    r = client.get("/healthz?deep=1", headers={"Authorization": "Bearer test-token-doctor"})
    data = r.json()
    assert r.status_code == 503 and "leases" in data["failing"]
    assert "NEKOFLOW_BROKER_VISIBILITY_TIMEOUT" in data["checks"]["leases"]["fix"]
    assert data["checks"]["model"]["ok"] and data["checks"]["database"]["ok"]
    assert "fix" not in data["checks"]["model"]
    no_token = make_api_client(api_token=None)
    assert no_token.get("/healthz?deep=1").status_code == 503


@pytest.fixture
def make_api_client(settings: Settings, engine, redis_client: redis.Redis, redis_url: str):
    """A TestClient of the real app on the test database and Redis."""
    from fastapi.testclient import TestClient

    from nekoflow.api import create_app

    clients = []

    def build(**overrides: Any) -> TestClient:
        values = {
            "api_token": SecretStr("test-token-doctor"),
            "redis_url": redis_url,
            "broker_url": redis_url,
        }
        s = Settings(**{**settings.model_dump(), **values, **overrides})
        client = TestClient(create_app(s, engine=engine, redis_client=redis_client))
        client.__enter__()
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.__exit__(None, None, None)
