"""A hanging embeddings endpoint costs one query budget, then is skipped (circuit breaker) until a
background probe finds it answering again. Against a loopback server that hangs; calls are
counted, never timed."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from nekoflow.memory.embeddings import Breaker, OpenAIEmbedder, query_vector


class HangingServer:
    """``POST /v1/embeddings`` hanging until ``release`` is set (then answering); counts calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.release = threading.Event()
        self.answered = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.calls += 1
                owner.release.wait(30)
                data = [
                    {"object": "embedding", "index": i, "embedding": [1.0, 0.0, 0.5]}
                    for i, _ in enumerate(body["input"])
                ]
                raw = json.dumps({"object": "list", "data": data, "model": "m"}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:
                    pass  # the client gave up waiting
                owner.answered.set()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def hanging() -> Iterator[HangingServer]:
    server = HangingServer()
    server.thread.start()
    yield server
    server.release.set()
    server.httpd.shutdown()
    server.httpd.server_close()


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_hanging_endpoint_is_asked_once_then_skipped_until_a_probe_finds_it(
    hanging: HangingServer,
) -> None:
    clock = Clock()
    breaker = Breaker(cooldown=60.0, clock=clock)
    emb = OpenAIEmbedder(hanging.base_url, "m", timeout=30)
    # The first turn waits its budget (the call hangs), then the breaker opens.
    assert query_vector(emb, "我的猫叫糯米", 0.3, breaker) is None
    assert hanging.calls == 1 and breaker.open
    # Every later turn skips the endpoint: no request at all.
    for _ in range(5):
        assert query_vector(emb, "我的猫叫糯米", 0.3, breaker) is None
    assert hanging.calls == 1
    # After the cooldown ONE probe goes out in the background; the turn still goes lexical.
    hanging.release.set()
    hanging.answered.clear()
    clock.now = 61.0
    assert query_vector(emb, "我的猫叫糯米", 0.3, breaker) is None
    assert query_vector(emb, "我的猫叫糯米", 0.3, breaker) is None  # the probe is in flight
    assert hanging.answered.wait(10)
    for _ in range(200):  # the probe's outcome is recorded by its done-callback
        if not breaker.open:
            break
        threading.Event().wait(0.05)
    assert not breaker.open
    # Recovered: the next turn gets its vector.
    assert query_vector(emb, "我的猫叫糯米", 5.0, breaker) is not None
    assert hanging.calls == 3  # the hanging call, the probe (one, not two), the recovered call
