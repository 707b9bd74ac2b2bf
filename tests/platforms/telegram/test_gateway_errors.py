"""``nekoflow gateway telegram`` (a real process, the loopback Bot API) never fails silently or
with a traceback: a token Telegram refuses ends it with one line naming the variable (never the
token); an API URL nothing answers at is named by its host in every retry line (never the
URL, which holds the token); a broken model configuration stops it at start with one line
naming the variable instead of looping ``ConfigError; again in 1s/2s/4s``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.platforms.gateway_proc import GatewayProc, free_port, gateway_env, wait_until
from tests.platforms.telegram.fake_botapi import FakeBotApi

pytestmark = pytest.mark.slow

GOOD = "123456:GOOD-token_abc"
WRONG = "654321:WRONG-token_xyz"


@pytest.fixture
def fake() -> Iterator[FakeBotApi]:
    api = FakeBotApi({GOOD})
    yield api
    api.close()


def _proc(tmp_path: Path, redis_url: str, **env: str) -> GatewayProc:
    values = gateway_env(
        f"sqlite:///{tmp_path / 'tg.db'}",
        redis_url,
        NEKOFLOW_TELEGRAM_MODE="polling",
        NEKOFLOW_TELEGRAM_POLL_TIMEOUT="1",
        **({"NEKOFLOW_LLM_PROVIDER": "scripted"} | env),
    )
    return GatewayProc(["telegram"], values, tmp_path / "telegram.log")


def _exit(proc: GatewayProc) -> int:
    assert proc.proc is not None
    wait_until(lambda: proc.proc.poll() is not None, 60, "the gateway to exit", proc.output)
    return proc.proc.returncode


def test_a_refused_token_is_one_line_naming_the_variable(
    fake: FakeBotApi, redis_url: str, redis_client, tmp_path: Path
) -> None:
    proc = _proc(
        tmp_path,
        redis_url,
        NEKOFLOW_TELEGRAM_API_BASE_URL=fake.url,
        NEKOFLOW_TELEGRAM_TOKEN=WRONG,
    )
    proc.start()
    try:
        code = _exit(proc)
        out = proc.output()
        assert code == 1, out
        assert "Traceback" not in out and WRONG not in out and "WRONG-token" not in out
        assert "Telegram refused the token (401) — check NEKOFLOW_TELEGRAM_TOKEN" in out
    finally:
        proc.kill()


def test_an_unreachable_api_url_is_named_by_its_host(
    redis_url: str, redis_client, tmp_path: Path
) -> None:
    port = free_port()  # nothing listens there
    proc = _proc(
        tmp_path,
        redis_url,
        NEKOFLOW_TELEGRAM_API_BASE_URL=f"http://127.0.0.1:{port}",
        NEKOFLOW_TELEGRAM_TOKEN=GOOD,
    )
    proc.start()
    try:
        proc.wait_for_output("again in 2s")  # two retry lines
        out = proc.output()
        lines = [ln for ln in out.splitlines() if "again in" in ln]
        assert all(f"at 127.0.0.1:{port}: not sent (ConnectError)" in ln for ln in lines), out
        assert GOOD not in out and "GOOD-token" not in out and "Traceback" not in out
    finally:
        proc.kill()


def test_a_broken_model_configuration_stops_the_gateway_at_start(
    fake: FakeBotApi, redis_url: str, redis_client, tmp_path: Path
) -> None:
    proc = _proc(
        tmp_path,
        redis_url,
        NEKOFLOW_TELEGRAM_API_BASE_URL=fake.url,
        NEKOFLOW_TELEGRAM_TOKEN=GOOD,
        NEKOFLOW_LLM_PROVIDER="openai",  # no base URL, no key
    )
    proc.start()
    try:
        code = _exit(proc)
        out = proc.output()
        assert code == 2, out
        (line,) = [ln for ln in out.splitlines() if ln.strip()]
        assert line.startswith("error: configuration error: NEKOFLOW_LLM_API_KEY: required"), out
        assert fake.calls("getUpdates") == []  # nothing fetched that it could not store
    finally:
        proc.kill()
