"""A loopback fake of Feishu's long-connection WebSocket server (real WebSocket on 127.0.0.1).

It speaks binary ``pbbp2.Frame``s: answers each ``ping`` control frame with a ``pong`` (whose
payload carries ``pong_config`` as a ClientConfig when set), pushes events as ``type=event``
data frames (split into parts on request, parts sent in any order), collects the client's
answers to data frames, can drop the current connection or refuse handshakes. The endpoint
that hands out its URL is in :mod:`tests.platforms.feishu.fake_feishu` (``state.ws_url``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import queue
import threading
import time
from typing import Any
from urllib.parse import parse_qs, urlparse

from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.sync.server import ServerConnection, serve

from nekoflow.platforms.feishu.frame import CONTROL, DATA, Frame


class FakeFeishuWS:
    """The fake server on an ephemeral port, serving in a daemon thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connections = 0
        self.closed = 0
        self.paths: list[dict[str, list[str]]] = []
        self.pings: list[tuple[int, Frame]] = []
        self.acks: queue.Queue[tuple[int, Frame]] = queue.Queue()
        self.pong_config: dict[str, Any] | None = None
        self.close_codes: list[int | None] = []
        #: Refuse handshakes with this HTTP status and these headers (``handshake-status`` …).
        self.reject: tuple[int, dict[str, str]] | None = None
        self.rejected = 0
        self._current: ServerConnection | None = None
        self._seq = itertools.count(1)
        self.server = serve(self._handler, "127.0.0.1", 0, process_request=self._check)
        self.url = f"ws://127.0.0.1:{self.server.socket.getsockname()[1]}/ws"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _check(self, ws: ServerConnection, request: Request) -> Response | None:
        if self.reject is None:
            return None
        status, headers = self.reject
        self.rejected += 1
        response = ws.respond(status, "refused\n")
        for key, value in headers.items():
            response.headers[key] = value
        return response

    def _handler(self, ws: ServerConnection) -> None:
        with self.lock:
            self.connections += 1
            n = self.connections
            self._current = ws
            self.paths.append(parse_qs(urlparse(ws.request.path if ws.request else "").query))
        try:
            for raw in ws:
                if not isinstance(raw, bytes):
                    continue
                frame = Frame.decode(raw)
                if frame.method == CONTROL and frame.header("type") == "ping":
                    with self.lock:
                        self.pings.append((n, frame))
                        config = self.pong_config
                    payload = json.dumps(config).encode() if config else None
                    pong = Frame(
                        service=frame.service,
                        method=CONTROL,
                        headers=[("type", "pong")],
                        payload=payload,
                    )
                    ws.send(pong.encode())
                elif frame.method == DATA:
                    self.acks.put((n, frame))
        except ConnectionClosed:
            pass
        finally:
            with self.lock:
                self.closed += 1
                self.close_codes.append(ws.close_code)
                if self._current is ws:
                    self._current = None

    def wait_connections(self, n: int, timeout: float = 20.0) -> None:
        """Block until ``n`` connections have been opened (fails after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self.connections >= n and self._current is not None:
                    return
            time.sleep(0.02)
        raise AssertionError(f"fake Feishu WS: {self.connections} connection(s), wanted {n}")

    def send_raw(self, data: bytes | str) -> None:
        """Send anything on the current connection."""
        with self.lock:
            ws = self._current
        assert ws is not None, "no connection"
        ws.send(data)

    def push(
        self, event: dict[str, Any] | bytes, *, parts: int = 1, order: list[int] | None = None
    ) -> str:
        """Send an event as data frame(s) of type ``event``; returns the frame message_id."""
        raw = event if isinstance(event, bytes) else json.dumps(event).encode()
        message_id = f"msg-{next(self._seq)}-{time.time_ns()}"
        size = -(-len(raw) // parts)
        chunks = [raw[i * size : (i + 1) * size] for i in range(parts)]
        for seq in order or list(range(parts)):
            frame = Frame(
                seq_id=next(self._seq),
                log_id=7,
                service=33,
                method=DATA,
                headers=[
                    ("type", "event"),
                    ("message_id", message_id),
                    ("sum", str(parts)),
                    ("seq", str(seq)),
                    ("trace_id", "trace-1"),
                ],
                payload=chunks[seq],
            )
            self.send_raw(frame.encode())
        return message_id

    def ack(self, message_id: str, timeout: float = 20.0) -> tuple[int, Frame]:
        """(connection number, frame) of the client's answer to ``message_id``."""
        deadline = time.monotonic() + timeout
        while True:
            n, frame = self.acks.get(timeout=max(0.01, deadline - time.monotonic()))
            if frame.header("message_id") == message_id:
                return n, frame

    def drop(self) -> None:
        """Close the current connection from the server side (as a restart would)."""
        with self.lock:
            ws = self._current
        if ws is not None:
            with contextlib.suppress(Exception):
                ws.close(code=1011)

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
