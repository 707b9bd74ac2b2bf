"""Feishu's long connection against the loopback endpoint and WebSocket server speaking the
frame protocol: endpoint handshake, events → turns (TurnRun rows) and ``{"code": 200}`` acks,
ping/pong with a new ClientConfig, a split event, a re-pushed event stored once, a failed store
answered 500 and stored when pushed again, bad frames survived, the server dropping the
connection (reconnect, continue), a bad credential (clear error, no retry loop), SIGTERM (clean
stop) and, end to end, real workers replying to an event that came over the connection."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, col, select
from typer.testing import CliRunner

from nekoflow.errors import InputError
from nekoflow.platforms.feishu.events import submit_event
from nekoflow.platforms.feishu.longconn import FeishuLongConnection
from nekoflow.platforms.feishu.settings import FeishuApp, FeishuSettings, get_feishu_settings
from nekoflow.storage.turns import TurnRun
from tests.platforms.feishu.conftest import APP_ID, APP_SECRET, message_event
from tests.platforms.feishu.fake_feishu import BOT_OPEN_ID, FakeFeishu
from tests.platforms.feishu.fake_feishu_ws import FakeFeishuWS
from tests.turns.conftest import wait_for

REPO = Path(__file__).resolve().parents[3]
FAST = {"ReconnectCount": 5, "ReconnectInterval": 1, "ReconnectNonce": 0, "PingInterval": 1}


@pytest.fixture
def fake_ws(fake_fs: FakeFeishu) -> Iterator[FakeFeishuWS]:
    """The long-connection server, handed out by the fake endpoint with a fast ClientConfig."""
    server = FakeFeishuWS()
    fake_fs.state.ws_url = server.url
    fake_fs.state.client_config = dict(FAST)
    yield server
    server.close()


def _app(secret: str = APP_SECRET) -> FeishuApp:
    return FeishuApp(
        name="neko",
        app_id=APP_ID,
        app_secret=secret,
        mode="long_connection",
        bot_open_id=BOT_OPEN_ID,
    )


def _connection(fake_fs: FakeFeishu, submit: Callable[[dict[str, Any]], Any], **kw: Any):
    return FeishuLongConnection(kw.pop("app", _app()), submit, base_url=fake_fs.url, timeout=5)


@contextlib.contextmanager
def running(conn: FeishuLongConnection) -> Iterator[threading.Event]:
    """Run ``conn`` in a thread; stop it (and check it stopped) afterwards."""
    stop = threading.Event()
    thread = threading.Thread(target=conn.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield stop
    finally:
        stop.set()
        thread.join(timeout=15)
        assert not thread.is_alive()


def _until(predicate: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    wait_for(predicate, timeout, what, lambda: "")


def _rows(engine) -> list[TurnRun]:
    with Session(engine) as s:
        return list(
            s.exec(
                select(TurnRun).where(TurnRun.channel == "feishu").order_by(col(TurnRun.created_at))
            ).all()
        )


def test_events_become_turns_acked_through_pings_splits_and_drops(deps, fake_fs, fake_ws) -> None:
    fs = FeishuSettings(api_base_url=fake_fs.url, apps=[_app()])
    handles: list[Any] = []

    def submit(payload: dict[str, Any]) -> Any:
        handles.append(submit_event(deps, fs.apps[0], fs, payload))
        return handles[-1]

    conn = _connection(fake_fs, submit)
    with running(conn):
        fake_ws.wait_connections(1)
        assert fake_ws.paths[0] == {"device_id": ["dev1"], "service_id": ["33"]}
        first = message_event("oc_lc1", "你好")
        message_id = fake_ws.push(first)
        n, ack = fake_ws.ack(message_id)
        assert n == 1 and json.loads(ack.payload or b"") == {"code": 200}
        assert ack.header("type") == "event" and ack.header("biz_rt") is not None
        assert ack.service == 33 and ack.log_id == 7
        assert json.loads(fake_ws.ack(fake_ws.push(first))[1].payload or b"")["code"] == 200

        big = message_event("oc_lc2", "长" * 3000)  # split in three, parts out of order
        _, big_ack = fake_ws.ack(fake_ws.push(big, parts=3, order=[2, 0, 1]))
        assert json.loads(big_ack.payload or b"") == {"code": 200}

        fake_ws.pong_config = {"PingInterval": 0.3}
        _until(lambda: conn.config.ping_interval == 0.3, "the pong's ClientConfig")
        _until(lambda: len(fake_ws.pings) >= 3, "pings")
        assert all(f.service == 33 and f.header("type") == "ping" for _, f in fake_ws.pings)

        fake_ws.drop()  # the server goes away: the client reconnects through the endpoint
        fake_ws.wait_connections(2)
        later = message_event("oc_lc3", "还在吗")
        n2, _ = fake_ws.ack(fake_ws.push(later))
        assert n2 == 2 and fake_fs.state.endpoint_calls == 2
    rows = _rows(deps.engine)
    assert [r.request["message_id"] for r in rows] == [
        e["event"]["message"]["message_id"] for e in (first, big, later)
    ]
    assert rows[1].request["content"] == "长" * 3000
    assert {r.bot for r in rows} == {"neko"}
    assert [h.turn_id for h in handles] == [r.turn_id for r in rows]  # the re-push: stored once
    assert conn.handled == 3 and conn.connections == 2 and conn.error is None
    # each server handler records its close after the client has gone, in either order on a
    # busy box: wait for both — the dropped connection (1011) and the clean stop (1000)
    _until(lambda: fake_ws.closed == 2, "the server to see both closes")
    assert sorted(c or 0 for c in fake_ws.close_codes) == [1000, 1011]  # stopped cleanly


def test_a_repush_after_a_restart_is_the_same_turn(deps, fake_fs, fake_ws) -> None:
    fs = FeishuSettings(api_base_url=fake_fs.url, apps=[_app()])
    event = message_event("oc_lc9", "喵")
    turn_ids = []
    for _ in range(2):  # a new process does not remember event ids: submit_turn dedupes
        conn = _connection(
            fake_fs, lambda p: turn_ids.append(submit_event(deps, fs.apps[0], fs, p).turn_id)
        )
        with running(conn):
            fake_ws.wait_connections(len(turn_ids) + 1)
            fake_ws.ack(fake_ws.push(event))
    assert len(turn_ids) == 2 and turn_ids[0] == turn_ids[1]
    assert len(_rows(deps.engine)) == 1


def test_failed_stores_bad_events_and_bad_frames(fake_fs, fake_ws) -> None:
    calls: list[dict[str, Any]] = []

    def submit(payload: dict[str, Any]) -> None:
        calls.append(payload)
        if len(calls) == 1:
            raise RuntimeError("database down")
        if payload.get("bad"):
            raise InputError("must be an object", field="event")

    conn = _connection(fake_fs, submit)
    event = message_event("oc_x", "第一句")

    def code(message_id: str) -> int:
        return json.loads(fake_ws.ack(message_id)[1].payload or b"")["code"]

    with running(conn):
        fake_ws.wait_connections(1)
        assert code(fake_ws.push(event)) == 500  # not stored: Feishu pushes it again
        assert code(fake_ws.push(event)) == 200
        assert code(fake_ws.push(b"not json")) == 200  # nothing to store, never re-pushed
        assert code(fake_ws.push(b"[1, 2]")) == 200
        assert code(fake_ws.push({"bad": True})) == 200
        fake_ws.send_raw(b"\xff\xff\xff")  # not a frame
        fake_ws.send_raw("a text message")
        assert code(fake_ws.push(message_event("oc_x", "第二句"))) == 200
    assert len(calls) == 4 and conn.handled == 2 and conn.connections == 1


def test_a_bad_credential_is_a_clear_error(fake_fs, fake_ws) -> None:
    conn = _connection(fake_fs, lambda p: None, app=_app("wrong-secret"))
    stop = threading.Event()
    conn.run(stop)  # returns by itself: retrying cannot help
    assert conn.error is not None
    assert "refused for app neko: error 514 (authentication failed)" in conn.error
    assert "app_secret" in conn.error and "wrong-secret" not in conn.error
    assert fake_ws.connections == 0 and fake_fs.state.endpoint_calls == 1


def test_refused_handshakes(fake_fs, fake_ws) -> None:
    fake_ws.reject = (403, {"handshake-status": "403", "handshake-msg": "forbidden"})
    conn = _connection(fake_fs, lambda p: None)
    conn.run(threading.Event())  # forbidden: no retry
    assert conn.error == "feishu long connection refused for app neko: forbidden"
    assert fake_ws.rejected == 1
    fake_ws.reject = (502, {})  # a server-side failure: retried until the server is back
    conn = _connection(fake_fs, lambda p: None)
    with running(conn):
        _until(lambda: fake_ws.rejected >= 2, "a refused handshake")
        fake_ws.reject = None
        fake_ws.wait_connections(1)
    assert conn.error is None and conn.connections == 1


def test_long_connection_apps_need_no_verification_token() -> None:
    app = FeishuSettings(app_id=APP_ID, app_secret=APP_SECRET, mode="long_connection").apps[0]
    assert app.mode == "long_connection"
    assert len(app.verification_token.get_secret_value()) >= 32  # nobody knows it: HTTP refused
    listed = FeishuApp.model_validate(
        {"app_id": APP_ID, "app_secret": APP_SECRET, "mode": "long_connection"}
    )
    secret = listed.verification_token.get_secret_value()
    assert len(secret) >= 32 and secret != app.verification_token.get_secret_value()
    with pytest.raises(ValueError, match="verification_token"):
        FeishuSettings(app_id=APP_ID, app_secret=APP_SECRET)
    with pytest.raises(ValueError, match="verification_token"):
        FeishuApp.model_validate({"app_id": APP_ID, "app_secret": APP_SECRET})


def test_the_command_reports_a_bad_credential(fake_fs, fake_ws, monkeypatch) -> None:
    import typer

    from nekoflow.platforms.feishu.cli import feishu_gateway_command

    for key in [k for k in os.environ if k.startswith("NEKOFLOW_FEISHU_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("NEKOFLOW_FEISHU_API_BASE_URL", fake_fs.url)
    monkeypatch.setenv("NEKOFLOW_FEISHU_APP_ID", APP_ID)
    monkeypatch.setenv("NEKOFLOW_FEISHU_APP_SECRET", "wrong-secret")
    monkeypatch.setenv("NEKOFLOW_FEISHU_APP_NAME", "neko")
    monkeypatch.setenv("NEKOFLOW_FEISHU_BOT_OPEN_ID", BOT_OPEN_ID)
    get_feishu_settings.cache_clear()
    app = typer.Typer()
    app.command()(feishu_gateway_command)
    result = CliRunner().invoke(app, ["--long-connection"])
    output = " ".join(result.output.split())  # rich wraps long lines
    assert result.exit_code == 1, output
    assert "error 514 (authentication failed); check app_id and app_secret" in output
    assert "wrong-secret" not in output


def test_sigterm_stops_the_gateway_cleanly(fake_fs, fake_ws) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env |= {
        "NEKOFLOW_FEISHU_API_BASE_URL": fake_fs.url,
        "NEKOFLOW_FEISHU_APP_ID": APP_ID,
        "NEKOFLOW_FEISHU_APP_SECRET": APP_SECRET,
        "NEKOFLOW_FEISHU_APP_NAME": "neko",
        "NEKOFLOW_FEISHU_MODE": "long_connection",
        "NEKOFLOW_FEISHU_BOT_OPEN_ID": BOT_OPEN_ID,
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "nekoflow", "gateway", "feishu"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        fake_ws.wait_connections(1, timeout=60)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out.decode()
    assert b"neko: bot open_id" in out and b"long connection" in out
    _until(lambda: fake_ws.closed == 1, "the server to see the close")
    assert fake_ws.close_codes == [1000]


def test_end_to_end_with_real_workers(live, workers, fs_env, fake_fs, fake_ws) -> None:
    workers.start(extra_env=fs_env)
    fs = get_feishu_settings()
    app = fs.apps[0].model_copy(update={"bot_open_id": None})  # learnt from the bot info API
    conn = _connection(fake_fs, lambda p: submit_event(live, app, fs, p), app=app)
    event = message_event("oc_lc_group", "你好呀", chat_type="group", mention_bot=True)
    with running(conn):
        fake_ws.wait_connections(1)
        fake_ws.ack(fake_ws.push(event))

    def settled() -> bool:
        runs = [r for r in _rows(live.engine) if r.request["conversation_id"] == "oc_lc_group"]
        return len(runs) == 1 and runs[0].delivery_status in ("sent", "failed")

    wait_for(settled, 60, "the reply", workers.logs)
    time.sleep(0.5)
    (run,) = [r for r in _rows(live.engine) if r.request["conversation_id"] == "oc_lc_group"]
    assert (run.status, run.delivery_status, run.bot) == ("done", "sent", "neko")
    assert run.request["is_mentioned"] is True and fake_fs.state.bot_info_calls == 1
    message_id = event["event"]["message"]["message_id"]
    assert fake_fs.texts(message_id) == [m["content"] for m in (run.rendered or [])]
