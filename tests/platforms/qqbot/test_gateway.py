"""The QQ bot gateway session against a loopback WebSocket server speaking the gateway
protocol: hello → identify (token, intents), READY, dispatches, heartbeats with the last seq,
a dropped connection resumed with session id and last seq (the platform replays what was
missed, nothing twice), op 9 → identify again; and the corpus gateway payloads."""

from __future__ import annotations

import contextlib
import json
import queue
import threading
from typing import Any

import pytest
from websockets.sync.server import serve

from nekoflow.platforms.qqbot.client import QQBotClient
from nekoflow.platforms.qqbot.gateway import QQBotGateway, SessionState
from nekoflow.platforms.qqbot.settings import QQBot
from nekoflow.platforms.tokens import LocalTokenCache
from tests.corpus import CORPUS
from tests.platforms.qqbot.conftest import APP_ID, SECRET, c2c_event
from tests.platforms.qqbot.fake_qq import FakeQQ


def test_session_state_follows_the_protocol() -> None:
    state = SessionState()
    ident = state.hello({"op": 10, "d": {"heartbeat_interval": 45000}}, "tok", 42)
    assert ident["op"] == 2 and ident["d"]["token"] == "QQBot tok"
    assert ident["d"]["intents"] == 42 and ident["d"]["shard"] == [0, 1]
    assert state.heartbeat_interval == 45.0
    assert state.heartbeat() == {"op": 1, "d": None}
    if CORPUS.is_dir():  # the docs' READY and RESUMED payloads
        docs = json.loads((CORPUS / "qqbot_official_docs_examples.json").read_text("utf-8"))
        for payload in docs["gateway_payloads"]:
            if payload.get("op") == 0:
                state.seen(payload)
        assert state.session_id == "082ee18c-0be3-491b-9d8b-fbd95c51673a"
        assert state.seq == 2002
    else:
        state.seen({"op": 0, "s": 2002, "t": "READY", "d": {"session_id": "s"}})
    resume = state.hello({"op": 10, "d": {}}, "tok2", 42)
    assert resume == {
        "op": 6,
        "d": {"token": "QQBot tok2", "session_id": state.session_id, "seq": 2002},
    }
    state.invalidate()
    assert state.hello({"op": 10, "d": {}}, "t", 1)["op"] == 2


class FakeGateway:
    """Scripted gateway server: connection 1 identifies, gets READY and two events, heartbeats,
    then drops; connection 2 must resume with the last seq, gets the missed event replayed."""

    def __init__(self) -> None:
        self.received: queue.Queue[tuple[int, dict[str, Any]]] = queue.Queue()
        self.connection = 0
        self.server = serve(self._handler, "127.0.0.1", 0)
        self.url = f"ws://127.0.0.1:{self.server.socket.getsockname()[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.events = [c2c_event("UG1", f"第{i}句") for i in range(3)]

    def _recv(self, ws, n: int) -> dict[str, Any]:
        msg = json.loads(ws.recv(timeout=10))
        self.received.put((n, msg))
        return msg

    def _handler(self, ws) -> None:
        self.connection += 1
        n = self.connection
        ws.send(json.dumps({"op": 10, "d": {"heartbeat_interval": 300}}))
        first = self._recv(ws, n)
        if n == 1:
            assert first["op"] == 2
            ws.send(json.dumps({"op": 0, "s": 1, "t": "READY", "d": {"session_id": "sess-1"}}))
            for s, event in ((2, self.events[0]), (3, self.events[1])):
                ws.send(json.dumps(event | {"s": s}))
            beat = self._recv(ws, n)
            while beat["op"] != 1 or beat["d"] != 3:
                beat = self._recv(ws, n)
            ws.send(json.dumps({"op": 11}))
            ws.close()  # a drop: event 4 happens while the bot is away
            return
        if n == 2:
            assert first["op"] == 6
            ws.send(json.dumps(self.events[2] | {"s": 4}))  # replayed after the resume
            ws.send(json.dumps({"op": 0, "s": 5, "t": "RESUMED", "d": ""}))
            ws.send(json.dumps({"op": 9, "d": False}))  # then the session is invalidated
            return
        self._recv(ws, n)  # connection 3 identifies again
        with contextlib.suppress(Exception):
            ws.recv(timeout=10)

    def close(self) -> None:
        self.server.shutdown()


def test_gateway_identifies_heartbeats_and_resumes() -> None:
    fake_api = FakeQQ(APP_ID, SECRET)
    gw_server = FakeGateway()
    fake_api.state.gateway_url = gw_server.url
    bot = QQBot(name="neko", app_id=APP_ID, secret=SECRET, mode="gateway", intents=1 << 25)
    client = QQBotClient(
        LocalTokenCache(lambda: ("tok-1", 7200.0)), base_url=fake_api.url, timeout=5
    )
    fake_api.state.tokens["tok-1"] = float("inf")
    got: list[tuple[str, str]] = []
    gateway = QQBotGateway(bot, client, lambda payload, name: got.append((payload["id"], name)))
    stop = threading.Event()
    thread = threading.Thread(target=gateway.run, args=(stop,), daemon=True)
    thread.start()
    try:
        sent: list[tuple[int, dict[str, Any]]] = []
        while not any(n == 3 for n, _ in sent):
            sent.append(gw_server.received.get(timeout=20))
    finally:
        stop.set()
        thread.join(timeout=10)
        gw_server.close()
        fake_api.close()
    assert [e for e, _ in got] == [e["id"] for e in gw_server.events]  # all, once, in order
    assert {name for _, name in got} == {"neko"}
    ident = next(m for n, m in sent if n == 1 and m["op"] == 2)
    assert ident["d"]["token"] == "QQBot tok-1" and ident["d"]["intents"] == 1 << 25
    resume = next(m for n, m in sent if n == 2)
    assert resume == {"op": 6, "d": {"token": "QQBot tok-1", "session_id": "sess-1", "seq": 3}}
    again = next(m for n, m in sent if n == 3)
    assert again["op"] == 2  # op 9 (not resumable): identify from scratch
    assert gateway.connections == 3 and not thread.is_alive()


@pytest.mark.parametrize("failures", [1])
def test_a_failed_store_is_replayed_after_resume(failures: int) -> None:
    state = SessionState()
    state.seen({"op": 0, "s": 7, "t": "READY", "d": {"session_id": "x"}})
    bot = QQBot(name="neko", app_id=APP_ID, secret=SECRET, mode="gateway")
    calls: list[str] = []

    def submit(payload: dict[str, Any], name: str) -> None:
        calls.append(payload["id"])
        if len(calls) <= failures:
            raise RuntimeError("database down")

    gateway = QQBotGateway(bot, None, submit)  # type: ignore[arg-type]
    gateway.state = state
    event = c2c_event("U9", "喵") | {"s": 8}
    with pytest.raises(Exception, match="store failed"):
        gateway._dispatch(event)
    assert state.seq == 7  # not seen: the resume asks for it again
    gateway._dispatch(event)
    assert state.seq == 8 and calls == [event["id"], event["id"]]
