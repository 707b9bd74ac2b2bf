"""OneBot end to end with real Celery workers, real Redis and the test database: a loopback
NapCat connects to ``nekoflow gateway onebot`` (a real process) over a real WebSocket, its
message becomes a turn and the reply comes back on the socket exactly once; the gateway is
SIGKILLed while replies wait for it and started again (nothing lost, nothing twice); the HTTP
POST receiver refuses unsigned events and the reply goes through the loopback HTTP API."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from nekoflow.api import create_app
from nekoflow.platforms.onebot.protocol import sign
from nekoflow.storage.turns import TurnRun
from tasks import enqueue_turn
from tests.platforms.onebot.conftest import BOT, BOT2, TOKEN, private_event, reset_caches
from tests.platforms.onebot.fake_onebot import FakeHttpApi, FakeNapCat
from tests.turns.conftest import REPO, wait_for

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _runs(engine, user_id: int) -> list[TurnRun]:
    with Session(engine) as s:
        runs = s.exec(
            select(TurnRun).where(TurnRun.channel == "qq").order_by(col(TurnRun.created_at))
        ).all()
    conv = f"qq:private:{user_id}"
    return [r for r in runs if r.request.get("conversation_id") == conv]


def _expected(engine, user_id: int) -> list[str]:
    return [m["content"] for r in _runs(engine, user_id) for m in (r.rendered or [])]


def _state(engine, user_id: int, texts: list[str]) -> str:
    runs = [(r.turn_id, r.status, r.delivery_status) for r in _runs(engine, user_id)]
    return f"\nruns: {runs}\nreceived: {texts}"


class Gateway:
    """``nekoflow gateway onebot`` as a real process."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env = env
        self.log = log
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.log.write_text("")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nekoflow", "gateway", "onebot"],
            cwd=REPO,
            env={**self.env, "COLUMNS": "200"},
            stdout=self.log.open("a"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while "listening" not in self.log.read_text(errors="replace"):
            assert self.proc.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.1)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def logs(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@pytest.fixture
def ob_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """One reverse-WS bot on a free port (this process and the children)."""
    env = {
        "NEKOFLOW_ONEBOT_SELF_ID": BOT,
        "NEKOFLOW_ONEBOT_ACCESS_TOKEN": TOKEN,
        "NEKOFLOW_ONEBOT_WS_PORT": str(_free_port()),
        "NEKOFLOW_DELIVERY_BACKOFF_BASE": "0.05",
        "NEKOFLOW_DELIVERY_BACKOFF_MAX": "0.2",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    reset_caches()
    yield env
    reset_caches()


@pytest.fixture
def gateway(worker_env, ob_env, tmp_path: Path) -> Iterator[Gateway]:
    gw = Gateway({**worker_env, **ob_env}, tmp_path / "gateway.log")
    yield gw
    gw.kill()


def test_napcat_conversation_and_gateway_restart(live, workers, ob_env, gateway: Gateway) -> None:
    workers.start(extra_env=ob_env)
    gateway.start()
    url = f"ws://127.0.0.1:{ob_env['NEKOFLOW_ONEBOT_WS_PORT']}/onebot/v11/ws"
    wrong = FakeNapCat(url, BOT, "wrong")
    fake = FakeNapCat(url, BOT, TOKEN)
    try:
        assert fake.wait_connected()
        wait_for(lambda: bool(wrong.refused), 10, "refusal", gateway.logs)
        assert wrong.refused[0] == 403 and wrong.connects == 0
        fake.send_event(private_event(5001, "你好呀,钦灵"))

        def answered(user: int, turns: int) -> bool:
            runs = _runs(live.engine, user)
            return (
                len(runs) == turns
                and all(r.delivery_status == "sent" for r in runs)
                and len(fake.texts(str(user))) >= len(_expected(live.engine, user))
            )

        logs = lambda: workers.logs() + gateway.logs()  # noqa: E731
        wait_for(lambda: answered(5001, 1), 90, "the reply on the socket", logs)
        time.sleep(0.5)  # a duplicate would arrive now
        assert fake.texts("5001") == _expected(live.engine, 5001)
        (run,) = _runs(live.engine, 5001)
        assert run.bot == BOT and run.status == "done"

        # the gateway dies; replies computed meanwhile wait in the bot's stream
        gateway.kill()
        for text in ("还在吗", "我回来了"):
            handle = enqueue_turn("qq", private_event(5002, text), bot=BOT)
            assert handle.turn_id is not None
            wait_for(
                lambda h=handle: live.engine and _delivery(live.engine, h.turn_id) == "handed_over",
                90,
                "the hand-over",
                logs,
            )
        assert fake.texts("5002") == []
        gateway.start()
        wait_for(
            lambda: answered(5002, 2),
            60,
            "replies after the restart",
            lambda: logs() + _state(live.engine, 5002, fake.texts("5002")),
        )
        time.sleep(0.5)
        assert fake.texts("5002") == _expected(live.engine, 5002)  # each chunk exactly once
        assert fake.connects >= 2
    finally:
        fake.close()
        wrong.close()


def _delivery(engine, turn_id: str) -> str | None:
    with Session(engine) as s:
        run = s.get(TurnRun, turn_id)
        return None if run is None else run.delivery_status


def test_http_post_receiver_and_http_api_delivery(
    live, workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = FakeHttpApi("api-token")
    bots = [
        {
            "self_id": BOT2,
            "mode": "http",
            "http_api_url": api.url,
            "http_api_token": "api-token",
            "secret": "sig-secret",
        }
    ]
    env = {
        "NEKOFLOW_ONEBOT_BOTS": json.dumps(bots),
        "NEKOFLOW_DELIVERY_BACKOFF_BASE": "0.05",
        "NEKOFLOW_DELIVERY_BACKOFF_MAX": "0.2",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    reset_caches()
    try:
        workers.start(extra_env=env)
        api.script = [(503, 0)]  # the first attempt fails temporarily
        app = create_app(live.settings, engine=live.engine, turn_deps=live)
        body = json.dumps(private_event(6001, "在吗?", self_id=BOT2), ensure_ascii=False).encode()
        headers = {"X-Self-ID": BOT2, "Content-Type": "application/json"}
        with TestClient(app) as client:
            path = "/webhooks/onebot"
            assert client.post(path, content=body, headers=headers).status_code == 401
            bad = headers | {"X-Signature": sign(body, "wrong")}
            assert client.post(path, content=body, headers=bad).status_code == 401
            other = headers | {"X-Self-ID": "42", "X-Signature": sign(body, "sig-secret")}
            assert client.post(path, content=body, headers=other).status_code == 401
            good = headers | {"X-Signature": sign(body, "sig-secret")}
            meta = b'{"post_type":"meta_event","meta_event_type":"heartbeat","self_id":1}'
            signed_meta = headers | {"X-Signature": sign(meta, "sig-secret")}
            assert client.post(path, content=meta, headers=signed_meta).status_code == 204
            first = client.post(path, content=body, headers=good)
            assert first.status_code == 204 and first.content == b""
            again = client.post(path, content=body, headers=good)  # re-posted: no second turn
            assert again.status_code == 204
        wait_for(
            lambda: [r.delivery_status for r in _runs(live.engine, 6001)] == ["sent"],
            90,
            "the reply through the HTTP API",
            workers.logs,
        )
        time.sleep(0.5)
        texts = [
            "".join(s["data"]["text"] for s in c["params"]["message"] if s["type"] == "text")
            for c in api.delivered()
        ]
        assert texts == _expected(live.engine, 6001)
        assert api.calls[0]["status"] == 503  # retried after the temporary failure
        assert all(c["params"]["user_id"] == 6001 for c in api.calls)
    finally:
        api.close()
        reset_caches()
