"""``nekoflow gateway qqbot``: the QQ bot WebSocket gateway session for bots without webhooks.

Protocol: ``GET /gateway`` (with the access token) names the WebSocket URL; the server opens
with op 10 Hello (``heartbeat_interval``); the client sends op 2 Identify (``token``,
``intents``, ``shard``) or, after a drop, op 6 Resume (``session_id`` + last ``seq``) so the
platform replays what was missed; op 1 Heartbeat carries the last seq (acked by op 11); op 0
dispatches carry ``s``; op 7 asks for a reconnect (resume), op 9 invalidates the session
(identify again). :class:`SessionState` is that logic in plain Python; :class:`QQBotGateway`
is the socket shell (``websockets``). A dispatch is stored as a turn before its seq counts as
seen: if storing fails, the connection is dropped and the resume replays the event.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from nekoflow.errors import InputError
from nekoflow.platforms.qqbot.client import QQBotClient
from nekoflow.platforms.qqbot.settings import QQBot
from nekoflow.platforms.runtime import reason

log = logging.getLogger(__name__)

Submit = Callable[[dict[str, Any], str], Any]
"""(dispatch payload, bot name) → stores the event as a turn (``enqueue_turn``)."""


@dataclass
class SessionState:
    """What survives a dropped connection: the session id and the last sequence number."""

    session_id: str | None = None
    seq: int | None = None
    heartbeat_interval: float = 41.25

    def hello(self, payload: dict[str, Any], token: str, intents: int) -> dict[str, Any]:
        """The answer to op 10: Resume when a session can be continued, else Identify."""
        d = payload.get("d") if isinstance(payload.get("d"), dict) else {}
        interval = d.get("heartbeat_interval")
        if isinstance(interval, int | float) and interval > 0:
            self.heartbeat_interval = float(interval) / 1000.0
        auth = f"QQBot {token}"
        if self.session_id and self.seq is not None:
            return {"op": 6, "d": {"token": auth, "session_id": self.session_id, "seq": self.seq}}
        return {
            "op": 2,
            "d": {
                "token": auth,
                "intents": intents,
                "shard": [0, 1],
                "properties": {"$os": "linux", "$browser": "nekoflow", "$device": "nekoflow"},
            },
        }

    def heartbeat(self) -> dict[str, Any]:
        """Op 1 with the last sequence number seen."""
        return {"op": 1, "d": self.seq}

    def seen(self, payload: dict[str, Any]) -> None:
        """Record a handled dispatch (its ``s``) and the session id of READY."""
        s = payload.get("s")
        if isinstance(s, int) and not isinstance(s, bool):
            self.seq = s if self.seq is None else max(self.seq, s)
        if payload.get("t") == "READY":
            d = payload.get("d") if isinstance(payload.get("d"), dict) else {}
            session = d.get("session_id")
            if isinstance(session, str) and session:
                self.session_id = session

    def invalidate(self) -> None:
        """Op 9: the session cannot be resumed."""
        self.session_id = None
        self.seq = None


class Reconnect(Exception):
    """The connection must be dropped and the session resumed."""


class QQBotGateway:
    """Holds one bot's gateway session, submitting chat dispatches as turns."""

    def __init__(self, bot: QQBot, client: QQBotClient, submit: Submit) -> None:
        self.bot = bot
        self.client = client
        self.submit = submit
        self.state = SessionState()
        #: Connections opened and dispatches stored (tests, logs).
        self.connections = 0
        self.handled = 0

    def gateway_url(self) -> str:
        """The WebSocket URL from ``GET /gateway``."""
        data = self.client.call("GET", "/gateway")
        url = data.get("url") if isinstance(data, dict) else None
        if not isinstance(url, str) or not url.startswith(("ws://", "wss://")):
            raise Reconnect("qqbot gateway: no WebSocket url")
        return url

    def _dispatch(self, payload: dict[str, Any]) -> None:
        if payload.get("t") not in ("READY", "RESUMED"):
            try:
                self.submit(payload, self.bot.name)
                self.handled += 1
            except InputError as exc:
                log.warning("qqbot %s: event ignored, bad field %s", self.bot.name, exc.field)
            except Exception as exc:  # not stored: resume so the platform replays it
                log.error("qqbot %s: could not store event (%s)", self.bot.name, reason(exc))
                raise Reconnect("store failed") from None
        self.state.seen(payload)

    def run_once(self, stop: threading.Event) -> None:
        """One connection: hello → identify/resume → dispatches and heartbeats until a drop."""
        url = self.gateway_url()
        token = self.client.tokens.get()
        with connect(url, open_timeout=10, close_timeout=2, max_size=2**22) as ws:
            self.connections += 1
            hello = json.loads(ws.recv(timeout=30))
            if hello.get("op") != 10:
                raise Reconnect("qqbot gateway: no hello")
            ws.send(json.dumps(self.state.hello(hello, token, self.bot.intents)))
            next_beat = time.monotonic() + self.state.heartbeat_interval
            while not stop.is_set():
                wait = max(0.0, next_beat - time.monotonic())
                try:
                    raw = ws.recv(timeout=min(wait, 1.0))
                except TimeoutError:
                    if time.monotonic() >= next_beat:
                        ws.send(json.dumps(self.state.heartbeat()))
                        next_beat = time.monotonic() + self.state.heartbeat_interval
                    continue
                payload = json.loads(raw)
                op = payload.get("op") if isinstance(payload, dict) else None
                if op == 0:
                    self._dispatch(payload)
                elif op == 7:
                    raise Reconnect("server asked for a reconnect")
                elif op == 9:
                    if not payload.get("d"):
                        self.state.invalidate()
                    raise Reconnect("invalid session")
                elif op == 1:
                    ws.send(json.dumps(self.state.heartbeat()))

    def run(self, stop: threading.Event, *, backoff_max: float = 30.0) -> None:
        """Keep a session until ``stop``: reconnect with backoff, resuming where it dropped."""
        delay = 0.5
        while not stop.is_set():
            try:
                self.run_once(stop)
                delay = 0.5
            except (Reconnect, ConnectionClosed, OSError, TimeoutError, ValueError) as exc:
                log.warning("qqbot %s: gateway dropped (%s)", self.bot.name, type(exc).__name__)
            except Exception as exc:  # token endpoint down, …: back off and try again
                log.error("qqbot %s: gateway error %s", self.bot.name, type(exc).__name__)
            stop.wait(delay)
            delay = min(delay * 2, backoff_max)
