"""A loopback OpenAI-compatible ``POST /v1/embeddings`` server for tests.

Its "model" knows a few concepts in Chinese and English (猫/cat/kitten, 草莓/strawberry, …): a
text's vector has weight on each concept it names, plus a small hashed character signal, so two
texts about the same thing in different words (or languages) are close. ``fail_next`` makes the
next calls answer an error whose body quotes the input (as some gateways do).
"""

from __future__ import annotations

import json
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CONCEPTS: list[tuple[str, ...]] = [
    ("猫", "cat", "kitten", "小猫"),
    ("草莓", "strawberry", "berries"),
    ("樱花", "cherry blossom", "sakura"),
    ("京都", "kyoto"),
    ("雨", "rain", "umbrella", "伞"),
    ("吉他", "guitar"),
]
DIMS = 32


def vector(text: str) -> list[float]:
    """The fake model's embedding of ``text``."""
    low = text.lower()
    out = [0.0] * DIMS
    for i, words in enumerate(CONCEPTS):
        if any(w in low for w in words):
            out[i] = 5.0
    for ch in low:
        if not ch.isspace():
            out[len(CONCEPTS) + zlib.crc32(ch.encode()) % (DIMS - len(CONCEPTS))] += 0.05
    return out


class EmbeddingsServer:
    """Serves embeddings on 127.0.0.1 (a context manager); records every request body."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.fail_next = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                owner.auth.append(self.headers.get("Authorization"))
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": {"message": "no such route"}})
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                if owner.fail_next:
                    owner.fail_next -= 1
                    quoted = f"upstream failed on input: {texts[0]}"
                    return self._send(500, {"error": {"message": quoted, "type": "server"}})
                data = [
                    {"object": "embedding", "index": i, "embedding": vector(t)}
                    for i, t in enumerate(texts)
                ]
                usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
                self._send(
                    200, {"object": "list", "data": data, "model": body["model"]} | {"usage": usage}
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload, ensure_ascii=False).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The ``…/v1`` base URL."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> EmbeddingsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
