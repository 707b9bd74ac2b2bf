"""A loopback OpenAI-compatible chat server answering after a fixed latency (for benchmarks).

    python bench/llm_loopback.py --port 18080 --latency 1.0

Answers ``POST /v1/chat/completions`` with an in-character reply and token usage, keeping
connections alive (HTTP/1.1) like a real endpoint. Runs in its own process so its CPU is not
counted as the pipeline's.
"""

from __future__ import annotations

import argparse
import json
import socket
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = "【开心】欢迎回来喵,今天也想听你说说海边的事。<お帰りなさい>(摇了摇尾巴)"


def _body(model: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": REPLY},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 420, "completion_tokens": 38, "total_tokens": 458},
        },
        ensure_ascii=False,
    ).encode()


def serve(port: int, latency: float) -> None:
    """Serve until killed."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            # As real model servers do (uvicorn, nginx): without TCP_NODELAY the body, written
            # after the headers, waits for the client's delayed ACK — 40 ms per call on a
            # kept-alive connection, which the benchmark would count as pipeline overhead.
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            super().setup()

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            model = str((json.loads(raw or b"{}") or {}).get("model") or "bench-model")
            time.sleep(latency)
            data = _body(model)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.request_queue_size = 256
    server.serve_forever()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--latency", type=float, default=1.0)
    a = p.parse_args()
    serve(a.port, a.latency)
