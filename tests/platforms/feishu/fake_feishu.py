"""A loopback fake of the Feishu Open API: real HTTP on 127.0.0.1.

``POST /open-apis/auth/v3/tenant_access_token/internal`` issues ``{"code": 0,
"tenant_access_token", "expire"}`` (code 10014 for a wrong secret); ``GET
/open-apis/bot/v3/info`` answers the bot's open_id; ``POST
/open-apis/im/v1/messages/{message_id}/reply`` needs ``Authorization: Bearer <token>`` with an
unexpired token (else code 99991663) and deduplicates by ``uuid`` as Feishu does (the same uuid
answers the first message again, nothing new is shown); ``POST /callback/ws/endpoint`` hands
out the long-connection URL of :class:`~tests.platforms.feishu.fake_feishu_ws.FakeFeishuWS`
(``state.ws_url``) with ``state.client_config`` (code 514 for wrong credentials). Errors
(HTTP 429 + code 99991400 with ``x-ogw-ratelimit-reset``, 11232, codes such as 230002) can be
scripted per replied-to message; a message the user recalled (``recall``) answers every reply
with HTTP 400 code 230011. ``POST /open-apis/im/v1/messages?receive_id_type=chat_id`` sends to
``receive_id`` (a chat), deduplicated by the same uuid table.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import default
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

BOT_OPEN_ID = "ou_bot_0000000000000000000000000001"


@dataclass
class FakeFeishuState:
    """Everything the fake knows; guarded by ``lock``."""

    app_id: str
    app_secret: str
    expire: int = 7200
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    tokens: dict[str, float] = field(default_factory=dict)
    issued: int = 0
    #: Uploaded files: file_key → bytes (``POST /im/v1/files``).
    files: dict[str, bytes] = field(default_factory=dict)
    bot_info_calls: int = 0
    #: Replies per replied-to message id, in arrival order.
    replies: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    by_uuid: dict[str, str] = field(default_factory=dict)
    #: Plain sends per chat id (``POST /im/v1/messages``), in arrival order.
    chat_sends: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    #: Message ids the user recalled: replying to them answers code 230011.
    recalled: set[str] = field(default_factory=set)
    scripted: dict[str, deque[tuple[int, int, str | None]]] = field(
        default_factory=lambda: defaultdict(deque)
    )
    #: The long connection: its WebSocket URL (None: no long connection) and ClientConfig.
    ws_url: str | None = None
    client_config: dict[str, Any] = field(default_factory=dict)
    endpoint_calls: int = 0


class FakeFeishu:
    """Runs the fake on an ephemeral port in a daemon thread."""

    def __init__(self, app_id: str, app_secret: str) -> None:
        self.state = FakeFeishuState(app_id=app_id, app_secret=app_secret)
        state = self.state

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _do(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                ctype = self.headers.get("Content-Type", "")
                if ctype.startswith("multipart/form-data"):
                    body = _multipart(ctype, raw)
                else:
                    try:
                        body = json.loads(raw or b"{}")
                    except ValueError:
                        body = {}
                path, _, qs = self.path.partition("?")
                query = {k: v[-1] for k, v in parse_qs(qs).items()}
                status, out, headers = handle(
                    state, method, path, body, self.headers.get("Authorization"), query
                )
                data = json.dumps(out).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

            def do_GET(self) -> None:
                self._do("GET")

            def do_POST(self) -> None:
                self._do("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def fail_next(self, message_id: str, status: int, code: int, reset: str | None = None) -> None:
        """Answer the next reply to ``message_id`` with this error."""
        with self.state.lock:
            self.state.scripted[message_id].append((status, code, reset))

    def recall(self, message_id: str) -> None:
        """The user recalled ``message_id``: replies to it answer code 230011 from now on."""
        with self.state.lock:
            self.state.recalled.add(message_id)

    def chat_sends(self, chat_id: str) -> list[dict[str, Any]]:
        """Bodies sent to ``chat_id`` through ``POST /im/v1/messages`` (uuid duplicates once)."""
        with self.state.lock:
            return list(self.state.chat_sends.get(chat_id, []))

    def expire_tokens(self) -> None:
        """Every issued tenant token is invalid from now on."""
        with self.state.lock:
            for token in self.state.tokens:
                self.state.tokens[token] = 0.0

    def replies(self, message_id: str) -> list[dict[str, Any]]:
        """Reply bodies to ``message_id`` (each once: uuid duplicates are not stored again)."""
        with self.state.lock:
            return list(self.state.replies.get(message_id, []))

    def texts(self, message_id: str) -> list[str]:
        """The text of each reply to ``message_id`` (text or the post's md paragraph)."""
        out = []
        for body in self.replies(message_id):
            content = json.loads(body["content"])
            if body["msg_type"] == "post":
                out.append(content["zh_cn"]["content"][0][0]["text"])
            else:
                out.append(content["text"])
        return out

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()


def _multipart(ctype: str, raw: bytes) -> dict[str, Any]:
    """The fields of a multipart/form-data body (a file field as its bytes)."""
    message = BytesParser(policy=default).parsebytes(
        f"Content-Type: {ctype}\r\n\r\n".encode() + raw
    )
    out: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True) or b""
        out[name] = data if part.get_filename() else data.decode()
    return out


def _err(status: int, code: int, reset: str | None = None) -> tuple[int, Any, dict[str, str]]:
    headers = {"x-ogw-ratelimit-reset": reset} if reset else {}
    return status, {"code": code, "msg": "scripted failure text"}, headers


def handle(
    state: FakeFeishuState,
    method: str,
    path: str,
    body: dict[str, Any],
    auth: str | None,
    query: dict[str, str] | None = None,
) -> tuple[int, Any, dict[str, str]]:
    """One request → (HTTP status, body, extra headers)."""
    with state.lock:
        state.calls.append((method, path, body))
        if path == "/open-apis/auth/v3/tenant_access_token/internal":
            if body.get("app_id") != state.app_id or body.get("app_secret") != state.app_secret:
                return 200, {"code": 10014, "msg": "app secret invalid"}, {}
            state.issued += 1
            token = f"t-{state.issued}"
            state.tokens[token] = time.monotonic() + state.expire
            return 200, {"code": 0, "tenant_access_token": token, "expire": state.expire}, {}
        if path == "/callback/ws/endpoint":
            state.endpoint_calls += 1
            if body.get("AppID") != state.app_id or body.get("AppSecret") != state.app_secret:
                return 200, {"code": 514, "msg": "auth failed", "data": None}, {}
            if state.ws_url is None:
                return 200, {"code": 1, "msg": "system busy"}, {}
            n = state.endpoint_calls
            url = f"{state.ws_url}?device_id=dev{n}&service_id=33"
            data = {"URL": url, "ClientConfig": state.client_config}
            return 200, {"code": 0, "msg": "ok", "data": data}, {}
        token = (auth or "").removeprefix("Bearer ")
        if state.tokens.get(token, 0.0) < time.monotonic():
            return 400, {"code": 99991663, "msg": "Invalid access token"}, {}
        if method == "GET" and path == "/open-apis/bot/v3/info":
            state.bot_info_calls += 1
            bot = {"open_id": BOT_OPEN_ID, "app_name": "neko", "activate_status": 2}
            return 200, {"code": 0, "msg": "ok", "bot": bot}, {}
        if method == "POST" and path == "/open-apis/im/v1/files":
            file = body.get("file")
            if body.get("file_type") != "opus" or not isinstance(file, bytes):
                return 400, {"code": 234001, "msg": "invalid file_type or file"}, {}
            if not file.startswith(b"OggS"):
                return 400, {"code": 234002, "msg": "not an opus file"}, {}
            key = f"file_v3_{len(state.files) + 1}"
            state.files[key] = file
            return 200, {"code": 0, "msg": "success", "data": {"file_key": key}}, {}
        if method == "POST" and path == "/open-apis/im/v1/messages":
            if (query or {}).get("receive_id_type") != "chat_id" or not body.get("receive_id"):
                return 400, {"code": 230001, "msg": "invalid receive_id"}, {}
            store = state.chat_sends[str(body["receive_id"])]
        else:
            parts = path.strip("/").split("/")
            if method != "POST" or len(parts) != 6 or parts[5] != "reply":
                return 404, {"code": 404, "msg": "not found"}, {}
            message_id = parts[4]
            if state.scripted[message_id]:
                return _err(*state.scripted[message_id].popleft())
            if message_id in state.recalled:
                return _err(400, 230011)
            store = state.replies[message_id]
        uuid = str(body.get("uuid") or "")
        if uuid and uuid in state.by_uuid:
            return 200, {"code": 0, "data": {"message_id": state.by_uuid[uuid]}}, {}
        store.append(body)
        total = sum(len(v) for v in state.replies.values())
        new_id = f"om_reply{total + sum(len(v) for v in state.chat_sends.values())}"
        if uuid:
            state.by_uuid[uuid] = new_id
        return 200, {"code": 0, "msg": "success", "data": {"message_id": new_id}}, {}
