"""A loopback OpenAI-compatible chat server whose answers a test scripts (errors, hangs, quotes).

A request with ``"stream": true`` gets its 200 answer as a ``text/event-stream`` of
``chat.completion.chunk`` events (``chunk_chars`` characters each, ``chunk_delay`` s apart, the
answer's delay before the first one; the usage chunk when ``stream_options.include_usage``; then
``[DONE]``), sent with chunked transfer encoding. ``cut_after[n] = k`` makes call ``n`` drop the
connection after ``k`` content chunks, in the middle of the HTTP body (a stream cut mid-way).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, dict[str, Any], dict[str, str], float]
"""(status, JSON body, headers, seconds to wait before answering)."""


def completion(text: str) -> dict[str, Any]:
    """A chat-completions body carrying ``text``."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "fake-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def stream_events(payload: dict[str, Any], chunk_chars: int, usage: bool) -> list[bytes]:
    """The SSE events streaming the completion ``payload``: role, content pieces, finish,
    usage (when asked), ``[DONE]``."""
    choice = payload["choices"][0]
    text = choice["message"]["content"] or ""
    base = {"id": payload.get("id", "chatcmpl-1"), "object": "chat.completion.chunk"}
    base["model"] = payload.get("model", "fake-model")

    def event(choices: list[dict[str, Any]], **extra: Any) -> bytes:
        body = {**base, "choices": choices, **extra}
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()

    events = [event([{"index": 0, "delta": {"role": "assistant", "content": ""}}])]
    for i in range(0, len(text), chunk_chars):
        piece = text[i : i + chunk_chars]
        events.append(event([{"index": 0, "delta": {"content": piece}, "finish_reason": None}]))
    finish = choice.get("finish_reason", "stop")
    events.append(event([{"index": 0, "delta": {}, "finish_reason": finish}]))
    if usage and payload.get("usage"):
        events.append(event([], usage=payload["usage"]))
    events.append(b"data: [DONE]\n\n")
    return events


class FakeLLM:
    """Answers POST /v1/chat/completions with ``script(request_body, n)``; records each call."""

    def __init__(
        self,
        script: Callable[[dict[str, Any], int], Answer],
        *,
        chunk_chars: int = 4,
        chunk_delay: float = 0.0,
    ) -> None:
        self.script = script
        self.calls: list[dict[str, Any]] = []
        #: the client's port per call (the same port: a reused keep-alive connection)
        self.peers: list[int] = []
        self.chunk_chars = chunk_chars
        self.chunk_delay = chunk_delay
        #: call number → content chunks sent before the connection is dropped mid-body.
        self.cut_after: dict[int, int] = {}
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _stream(self, payload: dict[str, Any], body: dict[str, Any], n: int) -> None:
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                events = stream_events(payload, outer.chunk_chars, usage)
                cut = outer.cut_after.get(n)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for i, data in enumerate(events):
                    if cut is not None and i > cut:  # events[0] is the role chunk
                        self.wfile.write(b'400\r\ndata: {"cho')  # a chunk cut short
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    if i > 1 and outer.chunk_delay:
                        time.sleep(outer.chunk_delay)
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with outer._lock:
                    outer.calls.append(body)
                    outer.peers.append(self.client_address[1])
                    n = len(outer.calls)
                status, payload, headers, delay = outer.script(body, n)
                if delay:
                    time.sleep(delay)
                if body.get("stream") and status == 200 and payload.get("choices"):
                    try:
                        self._stream(payload, body, n)
                    except OSError:  # the client gave up
                        self.close_connection = True
                    return
                data = json.dumps(payload, ensure_ascii=False).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timeout)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The ``/v1`` base URL to give the OpenAI client."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def env(self, **extra: str) -> dict[str, str]:
        """Worker environment pointing the openai provider here."""
        return {
            "NEKOFLOW_LLM_PROVIDER": "openai",
            "NEKOFLOW_LLM_BASE_URL": self.base_url,
            "NEKOFLOW_LLM_API_KEY": "sk-test-not-secret",
            **extra,
        }

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def user_text_of(body: dict[str, Any]) -> str:
    """The last user message of a chat request."""
    users = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
    return users[-1] if users else ""
