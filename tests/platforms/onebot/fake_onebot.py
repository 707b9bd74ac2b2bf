"""Loopback OneBot v11 implementations for tests.

:class:`FakeNapCat` is a reverse-WebSocket client (like NapCat's "WebSocket 客户端"): it connects
to the gateway over a real socket with ``X-Self-ID``, ``X-Client-Role`` and the bearer token,
keeps reconnecting when the gateway goes away, sends events and answers ``send_msg`` actions
with their ``echo`` (``retcode`` 0 and a message id, or a scripted retcode).

:class:`FakeHttpApi` is the implementation's HTTP API (``POST /send_msg`` with a bearer token),
answering with scripted HTTP statuses and retcodes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

_message_ids = itertools.count(9_000_001)


class FakeNapCat:
    """One bot account connecting to ``url`` over a reverse WebSocket (in its own thread)."""

    def __init__(
        self,
        url: str,
        self_id: str,
        token: str | None,
        *,
        role: str = "Universal",
        answer: Callable[[dict[str, Any]], int] | None = None,
    ) -> None:
        self.url = url
        self.self_id = self_id
        self.token = token
        self.role = role
        self.answer = answer or (lambda action: 0)
        self.actions: list[dict[str, Any]] = []
        self.connects = 0
        self.refused: list[int] = []
        self.lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self._ws: Any = None
        self._connected = threading.Event()
        self._stop: asyncio.Event | None = None
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._task = asyncio.run_coroutine_threadsafe(self._run(), self.loop)

    def headers(self) -> dict[str, str]:
        """The handshake headers NapCat sends."""
        headers = {"X-Self-ID": self.self_id, "X-Client-Role": self.role}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    async def _run(self) -> None:
        self._stop = asyncio.Event()
        while not self._stop.is_set():
            try:
                async with connect(
                    self.url, additional_headers=self.headers(), open_timeout=2
                ) as ws:
                    self._ws = ws
                    self.connects += 1
                    self._connected.set()
                    await ws.send(json.dumps(self.lifecycle()))
                    async for raw in ws:
                        await self._on_action(ws, json.loads(raw))
            except InvalidStatus as exc:
                self.refused.append(exc.response.status_code)
            except (OSError, ConnectionClosed, TimeoutError):
                pass
            finally:
                self._ws = None
                self._connected.clear()
            await asyncio.sleep(0.2)

    async def _on_action(self, ws: Any, action: dict[str, Any]) -> None:
        with self.lock:
            self.actions.append(action)
        retcode = self.answer(action)
        if retcode < 0:
            return  # never answer (a hung implementation)
        response: dict[str, Any] = {
            "status": "ok" if retcode in (0, 1) else "failed",
            "retcode": retcode,
            "data": {"message_id": next(_message_ids)} if retcode == 0 else None,
            "message": "",
            "wording": "",
            "echo": action.get("echo"),
        }
        await ws.send(json.dumps(response))

    def lifecycle(self) -> dict[str, Any]:
        """The ``connect`` lifecycle meta event NapCat sends first."""
        return {
            "time": 1769406187,
            "self_id": int(self.self_id),
            "post_type": "meta_event",
            "meta_event_type": "lifecycle",
            "sub_type": "connect",
        }

    def wait_connected(self, timeout: float = 10.0) -> bool:
        """True once a socket is open."""
        return self._connected.wait(timeout)

    def send_event(self, event: dict[str, Any]) -> None:
        """Push one event over the open socket."""
        assert self.wait_connected(), "not connected"

        async def push() -> None:
            await self._ws.send(json.dumps(event, ensure_ascii=False))

        asyncio.run_coroutine_threadsafe(push(), self.loop).result(5)

    def texts(self, chat: str | None = None) -> list[str]:
        """The text of every ``send_msg`` received (optionally for one group/user id)."""
        out = []
        with self.lock:
            actions = list(self.actions)
        for action in actions:
            params = action.get("params") or {}
            target = str(params.get("group_id") or params.get("user_id") or "")
            if chat is not None and target != chat:
                continue
            out.append(
                "".join(
                    s["data"].get("text", "")
                    for s in params.get("message", [])
                    if s["type"] == "text"
                )
            )
        return out

    def close(self) -> None:
        """Stop reconnecting and close the socket."""

        async def stop() -> None:
            assert self._stop is not None
            self._stop.set()
            if self._ws is not None:
                await self._ws.close()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(5)
        with contextlib.suppress(Exception):
            self._task.result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class FakeHttpApi:
    """The implementation's HTTP API on an ephemeral loopback port."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.calls: list[dict[str, Any]] = []
        #: Scripted answers, consumed first: (HTTP status, retcode).
        self.script: list[tuple[int, int]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Authorization") != f"Bearer {fake.token}":
                    self._answer(401, {"status": "failed", "retcode": 1401})
                    return
                if self.path != "/send_msg":
                    self._answer(404, {"status": "failed", "retcode": 1404})
                    return
                params = json.loads(body)
                status, retcode = fake.script.pop(0) if fake.script else (200, 0)
                fake.calls.append({"params": params, "status": status, "retcode": retcode})
                data = {"message_id": next(_message_ids)} if retcode == 0 else None
                self._answer(status, {"status": "ok", "retcode": retcode, "data": data})

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def delivered(self) -> list[dict[str, Any]]:
        """The send_msg calls that were answered with success."""
        return [c for c in self.calls if c["status"] == 200 and c["retcode"] == 0]

    def close(self) -> None:
        """Stop the server."""
        self.server.shutdown()
        self.server.server_close()
