"""A loopback fake of the QQ bot OpenAPI and token endpoint: real HTTP on 127.0.0.1.

``POST /app/getAppAccessToken`` with ``{appId, clientSecret}`` issues ``{"access_token",
"expires_in"}`` (a string, as QQ sends it; a wrong secret gets code 100016). Message endpoints
(``/v2/users/{openid}/messages``, ``/v2/groups/{group_openid}/messages``,
``/channels/{channel_id}/messages``, ``/dms/{guild_id}/messages``) need ``Authorization: QQBot
<token>`` with an unexpired token (else 401, code 11244), and refuse a second message with the
same ``msg_id`` + ``msg_seq`` (code 40054005) as QQ does; without a ``msg_id`` (an active
message) there is no dedupe. Errors (429, 5xx, codes — also on HTTP 200/202, as QQ sometimes
answers) can be scripted per chat; ``hold`` keeps the answer to the next message of a chat
until released.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Call:
    """One request the fake received."""

    method: str
    path: str
    body: dict[str, Any]
    auth: str


@dataclass
class FakeQQState:
    """Everything the fake knows; guarded by ``lock``."""

    app_id: str
    secret: str
    expires_in: int = 7200
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: list[Call] = field(default_factory=list)
    tokens: dict[str, float] = field(default_factory=dict)  # token → expiry (monotonic)
    issued: int = 0
    #: Delivered messages per chat id (accepted bodies, in order).
    messages: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    seen: set[tuple[str, str, int]] = field(default_factory=set)
    duplicates: int = 0
    #: Uploaded rich media: file_info → bytes.
    files: dict[str, bytes] = field(default_factory=dict)
    scripted: dict[str, deque[tuple[int, int]]] = field(default_factory=lambda: defaultdict(deque))
    holds: dict[str, threading.Event] = field(default_factory=dict)
    held: dict[str, threading.Event] = field(default_factory=dict)
    gateway_url: str = ""


class FakeQQ:
    """Runs the fake on an ephemeral port in a daemon thread."""

    def __init__(self, app_id: str, secret: str, *, expires_in: int = 7200) -> None:
        self.state = FakeQQState(app_id=app_id, secret=secret, expires_in=expires_in)
        state = self.state

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _body(self) -> dict[str, Any]:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    data = json.loads(raw or b"{}")
                except ValueError:
                    data = {}
                return data if isinstance(data, dict) else {}

            def do_GET(self) -> None:
                status, body = handle(
                    state, "GET", self.path, {}, self.headers.get("Authorization")
                )
                self._answer(status, body)

            def do_POST(self) -> None:
                body = self._body()
                status, out = handle(
                    state, "POST", self.path, body, self.headers.get("Authorization")
                )
                self._answer(status, out)

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.token_url = f"{self.url}/app/getAppAccessToken"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def fail_next(self, chat_id: str, status: int, code: int) -> None:
        """Answer the next message to ``chat_id`` with this error (queued in order)."""
        with self.state.lock:
            self.state.scripted[chat_id].append((status, code))

    def expire_tokens(self) -> None:
        """Every issued token expires now (the platform revoked or timed them out)."""
        with self.state.lock:
            for token in self.state.tokens:
                self.state.tokens[token] = 0.0

    def hold(self, chat_id: str) -> threading.Event:
        """Hold the answer to the next message of ``chat_id``; the returned event is set once
        the message has arrived (and been stored)."""
        with self.state.lock:
            self.state.holds[chat_id] = threading.Event()
            arrived = threading.Event()
            self.state.held[chat_id] = arrived
            return arrived

    def release(self, chat_id: str) -> None:
        """Let a held answer go."""
        with self.state.lock:
            event = self.state.holds.pop(chat_id, None)
        if event is not None:
            event.set()

    def texts(self, chat_id: str) -> list[str]:
        """Texts delivered to ``chat_id``, in arrival order (each once: duplicates refused)."""
        with self.state.lock:
            return [str(m.get("content")) for m in self.state.messages.get(chat_id, [])]

    def sent(self, chat_id: str) -> list[dict[str, Any]]:
        """Bodies delivered to ``chat_id``."""
        with self.state.lock:
            return list(self.state.messages.get(chat_id, []))

    def calls(self, path_part: str = "") -> list[Call]:
        """Requests received whose path contains ``path_part``."""
        with self.state.lock:
            return [c for c in self.state.calls if path_part in c.path]

    def close(self) -> None:
        """Stop serving."""
        for chat in list(self.state.holds):
            self.release(chat)
        self.server.shutdown()
        self.server.server_close()


def _upload(state: FakeQQState, kind: str, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /v2/{users|groups}/{id}/files``: a base64 SILK voice becomes a file_info."""
    try:
        data = base64.b64decode(str(body.get("file_data") or ""), validate=True)
    except ValueError:
        return _err(400, 40034001, "file_data invalid")
    if body.get("file_type") != 3 or not data.startswith(b"\x02#!SILK_V3"):
        return _err(400, 40034002, "voice must be silk")
    info = f"fi-{kind}-{len(state.files) + 1}"
    state.files[info] = data
    return 200, {"file_uuid": info, "file_info": info, "ttl": 3600}


def _err(status: int, code: int, message: str) -> tuple[int, dict[str, Any]]:
    return status, {"code": code, "message": message, "err_code": code, "trace_id": "fake"}


def _chat_of(path: str) -> tuple[str, str] | None:
    parts = path.strip("/").split("/")
    if len(parts) == 4 and parts[0] == "v2" and parts[1] in ("users", "groups"):
        return parts[1], parts[2]
    if len(parts) == 3 and parts[0] in ("channels", "dms") and parts[2] == "messages":
        return parts[0], parts[1]
    return None


def handle(
    state: FakeQQState, method: str, path: str, body: dict[str, Any], auth: str | None
) -> tuple[int, Any]:
    """One request → (HTTP status, body)."""
    with state.lock:
        state.calls.append(Call(method, path, body, auth or ""))
        if path == "/app/getAppAccessToken":
            if body.get("appId") != state.app_id or body.get("clientSecret") != state.secret:
                return _err(200, 100016, "invalid appid or secret")
            state.issued += 1
            token = f"tok-{state.issued}"
            state.tokens[token] = time.monotonic() + state.expires_in
            return 200, {"access_token": token, "expires_in": str(state.expires_in)}
        token = (auth or "").removeprefix("QQBot ")
        if (
            not auth
            or not auth.startswith("QQBot ")
            or state.tokens.get(token, 0) < time.monotonic()
        ):
            return _err(401, 11244, "token not exist or expire")
        if method == "GET" and path.startswith("/gateway"):
            return 200, {"url": state.gateway_url}
        chat = _chat_of(path)
        if method != "POST" or chat is None:
            return _err(404, 404, "not found")
        kind, chat_id = chat
        if path.endswith("/files"):  # rich media upload (file_type 3: voice, SILK only)
            return _upload(state, kind, body)
        if state.scripted[chat_id]:
            status, code = state.scripted[chat_id].popleft()
            return _err(status, code, "scripted")
        if kind in ("users", "groups") and body.get("msg_id"):  # msg_seq dedupes with msg_id only
            key = (chat_id, str(body.get("msg_id")), int(body.get("msg_seq") or 0))
            if key in state.seen:
                state.duplicates += 1
                return _err(400, 40054005, "消息被去重,请检查请求msgseq")
            state.seen.add(key)
        if body.get("msg_type") == 7:
            if (body.get("media") or {}).get("file_info") not in state.files:
                return _err(400, 40034028, "file_info invalid")
        elif not str(body.get("content") or "").strip():
            return _err(400, 50006, "message is empty")
        state.messages[chat_id].append(body)
        message_id = f"m-{sum(len(v) for v in state.messages.values())}"
        hold = state.holds.get(chat_id)
        arrived = state.held.pop(chat_id, None)
    if arrived is not None:
        arrived.set()
    if hold is not None:
        hold.wait(timeout=30)
    return 200, {"id": message_id, "timestamp": int(time.time())}
