"""Drive an ASGI app with a body fed in chunks, counting how much of it the app pulled."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Outcome:
    """What the app answered, and how many body bytes it read."""

    status: int = 0
    body: bytes = b""
    read_bytes: int = 0
    headers: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        """The answer as JSON."""
        return json.loads(self.body)


def call(
    app: Any,
    path: str,
    *,
    chunks: int,
    chunk: bytes = b"[" * 65536,
    headers: dict[str, str] | None = None,
    declare_length: bool = False,
    method: str = "POST",
) -> Outcome:
    """POST ``chunks`` × ``chunk`` to ``path`` (chunked unless ``declare_length``)."""
    outcome = Outcome()
    sent = 0
    raw_headers = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    if declare_length:
        raw_headers.append((b"content-length", str(chunks * len(chunk)).encode()))
    else:
        raw_headers.append((b"transfer-encoding", b"chunked"))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": raw_headers,
        "client": ("127.0.0.1", 1234),
        "server": ("testserver", 80),
        "state": {},
    }

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent >= chunks:
            await asyncio.sleep(3600)  # a client that sends nothing more
        sent += 1
        outcome.read_bytes += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": sent < chunks}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            outcome.status = message["status"]
            outcome.headers = {k.decode(): v.decode() for k, v in message.get("headers", [])}
        elif message["type"] == "http.response.body":
            outcome.body += message.get("body", b"")

    asyncio.run(asyncio.wait_for(app(scope, receive, send), 60))
    return outcome
