"""A loopback fake of the Telegram Bot API: real HTTP on 127.0.0.1, speaking the Bot API.

``POST /bot<token>/<method>`` with a JSON body answers ``{"ok": true, "result": …}`` or
``{"ok": false, "error_code": …, "description": …, "parameters": {"retry_after": …}}`` like
api.telegram.org: 401 for an unknown token, 403 "Forbidden: bot was blocked by the user", 400
"Bad Request: chat not found", 400 "group chat was upgraded to a supergroup chat" with
``parameters.migrate_to_chat_id`` for a migrated group (``migrate``), 429 "Too Many Requests:
retry after N" — scripted per chat, or automatically when a chat gets more messages than
``flood_limit`` in one second (as Telegram does). ``sendVoice`` takes its upload as
multipart/form-data (``voice`` recorded with its bytes). ``getUpdates`` serves queued updates with
offset semantics and long polling; ``hold`` keeps the answer to the next sendMessage of a chat
until released (to kill a worker mid-call); ``answer_late`` delivers the next one but answers
it only after a delay (a slow platform: the client's read timeout fires although the message
went out).
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


@dataclass
class Call:
    """One Bot API request the fake received."""

    token: str
    method: str
    params: dict[str, Any]
    at: float


@dataclass
class FakeState:
    """Everything the fake knows; guarded by ``lock``."""

    tokens: set[str]
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: list[Call] = field(default_factory=list)
    #: Delivered messages per chat id: (message_id, params).
    messages: dict[str, list[tuple[int, dict[str, Any]]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    #: Scripted error answers per chat, used (and consumed) in order before succeeding.
    scripted: dict[str, deque[tuple[int, str, dict[str, Any]]]] = field(
        default_factory=lambda: defaultdict(deque)
    )
    blocked: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)
    #: Groups upgraded to a supergroup: old chat id → the supergroup's chat id.
    migrated: dict[str, int] = field(default_factory=dict)
    #: Chats whose next sendMessage is recorded, then answered only after ``release``.
    holds: dict[str, threading.Event] = field(default_factory=dict)
    held: dict[str, threading.Event] = field(default_factory=dict)
    #: Seconds to wait before answering the next accepted sendMessage of a chat (in order).
    late: dict[str, deque[float]] = field(default_factory=lambda: defaultdict(deque))
    flood_limit: int | None = None
    flood_answers: int = 0
    updates: list[dict[str, Any]] = field(default_factory=list)
    offsets: list[int | None] = field(default_factory=list)
    new_updates: threading.Condition | None = None
    next_message_id: int = 1000
    #: The URL the last setWebhook registered ("" after deleteWebhook), for getWebhookInfo.
    webhook_url: str = ""


class FakeBotApi:
    """Runs the fake on an ephemeral port in a daemon thread."""

    def __init__(self, tokens: set[str]) -> None:
        self.state = FakeState(tokens=set(tokens))
        self.state.new_updates = threading.Condition(self.state.lock)
        state = self.state

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                ctype = self.headers.get("Content-Type", "")
                if ctype.startswith("multipart/form-data"):
                    params = _multipart(ctype, raw)
                else:
                    try:
                        params = json.loads(raw or b"{}")
                    except ValueError:
                        params = {}
                parts = self.path.strip("/").split("/")
                if len(parts) != 2 or not parts[0].startswith("bot"):
                    self._answer(404, {"ok": False, "error_code": 404, "description": "Not Found"})
                    return
                token, method = parts[0][3:], parts[1]
                status, body = handle(state, token, method, params)
                self._answer(status, body)

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client went away (a killed worker)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    # --- scripting ---------------------------------------------------------------------------

    def fail_next(self, chat_id: str, code: int, description: str, **parameters: Any) -> None:
        """Answer the next sendMessage to ``chat_id`` with this error (queued in order)."""
        with self.state.lock:
            self.state.scripted[str(chat_id)].append((code, description, parameters))

    def migrate(self, chat_id: str | int, new_chat_id: int) -> None:
        """Upgrade group ``chat_id`` to a supergroup: every later send there answers 400 with
        ``parameters.migrate_to_chat_id`` (as the Bot API does)."""
        with self.state.lock:
            self.state.migrated[str(chat_id)] = new_chat_id

    def hold(self, chat_id: str) -> threading.Event:
        """Hold the answer to the next sendMessage of ``chat_id``; returns the event set once
        the request has arrived (and been recorded)."""
        with self.state.lock:
            self.state.holds[str(chat_id)] = threading.Event()
            arrived = threading.Event()
            self.state.held[str(chat_id)] = arrived
            return arrived

    def answer_late(self, chat_id: str, seconds: float) -> None:
        """Deliver the next sendMessage of ``chat_id`` but answer it ``seconds`` later."""
        with self.state.lock:
            self.state.late[str(chat_id)].append(seconds)

    def release(self, chat_id: str) -> None:
        """Let a held answer go."""
        with self.state.lock:
            event = self.state.holds.pop(str(chat_id), None)
        if event is not None:
            event.set()

    def push_update(self, update: dict[str, Any]) -> None:
        """Queue an update for getUpdates."""
        assert self.state.new_updates is not None
        with self.state.new_updates:
            self.state.updates.append(update)
            self.state.new_updates.notify_all()

    # --- reading -------------------------------------------------------------------------------

    def sent(self, chat_id: str | int) -> list[dict[str, Any]]:
        """Params of every message delivered to ``chat_id``, in arrival order."""
        with self.state.lock:
            return [p for _, p in self.state.messages.get(str(chat_id), [])]

    def texts(self, chat_id: str | int) -> list[str]:
        """Texts delivered to ``chat_id`` in arrival order."""
        return [str(p.get("text")) for p in self.sent(chat_id)]

    def calls(self, method: str | None = None) -> list[Call]:
        """Requests received (of ``method``)."""
        with self.state.lock:
            return [c for c in self.state.calls if method is None or c.method == method]

    def close(self) -> None:
        """Stop serving."""
        for chat in list(self.state.holds):
            self.release(chat)
        self.server.shutdown()
        self.server.server_close()


def _multipart(ctype: str, raw: bytes) -> dict[str, Any]:
    """The fields of a multipart/form-data body; an uploaded file becomes
    ``{"file_name", "content_type", "size", "data"}`` and JSON-looking fields are decoded (as
    the Bot API reads form parameters)."""
    message = BytesParser(policy=default).parsebytes(
        f"Content-Type: {ctype}\r\n\r\n".encode() + raw
    )
    out: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True) or b""
        if part.get_filename():
            out[name] = {
                "file_name": part.get_filename(),
                "content_type": part.get_content_type(),
                "size": len(data),
                "data": data,
            }
            continue
        text = data.decode()
        try:
            out[name] = json.loads(text) if text[:1] in "{[" or text.lstrip("-").isdigit() else text
        except ValueError:
            out[name] = text
    return out


def _error(code: int, description: str, **parameters: Any) -> tuple[int, dict[str, Any]]:
    body: dict[str, Any] = {"ok": False, "error_code": code, "description": description}
    if parameters:
        body["parameters"] = parameters
    return code, body


def handle(state: FakeState, token: str, method: str, params: dict[str, Any]) -> tuple[int, Any]:
    """One Bot API call → (HTTP status, body)."""
    now = time.monotonic()
    with state.lock:
        state.calls.append(Call(token, method, params, now))
        if token not in state.tokens:
            return _error(401, "Unauthorized")
    if method == "getMe":
        return 200, {"ok": True, "result": {"id": 1, "is_bot": True, "username": "nekobot"}}
    if method in ("deleteWebhook", "setWebhook"):
        with state.lock:
            state.webhook_url = str(params.get("url") or "") if method == "setWebhook" else ""
        return 200, {"ok": True, "result": True, "description": "Webhook was deleted"}
    if method == "getWebhookInfo":
        with state.lock:
            url = state.webhook_url
        return 200, {"ok": True, "result": {"url": url, "pending_update_count": 0}}
    if method == "sendChatAction":
        return 200, {"ok": True, "result": True}
    if method == "getUpdates":
        return _get_updates(state, params)
    if method in ("sendMessage", "sendPhoto", "sendVoice"):
        return _send(state, params, now)
    return _error(404, "Not Found: method not found")


def _get_updates(state: FakeState, params: dict[str, Any]) -> tuple[int, Any]:
    offset = params.get("offset")
    wait = min(float(params.get("timeout") or 0), 2.0)
    assert state.new_updates is not None
    with state.new_updates:
        state.offsets.append(offset)
        if isinstance(offset, int):  # confirms every update below the offset
            state.updates = [u for u in state.updates if u["update_id"] >= offset]
        deadline = time.monotonic() + wait
        while not state.updates and time.monotonic() < deadline:
            state.new_updates.wait(timeout=max(0.0, deadline - time.monotonic()))
        return 200, {"ok": True, "result": list(state.updates[:100])}


def _send(state: FakeState, params: dict[str, Any], now: float) -> tuple[int, Any]:
    chat = str(params.get("chat_id"))
    with state.lock:
        if chat in state.missing:
            return _error(400, "Bad Request: chat not found")
        if chat in state.blocked:
            return _error(403, "Forbidden: bot was blocked by the user")
        if chat in state.migrated:
            return _error(
                400,
                "Bad Request: group chat was upgraded to a supergroup chat",
                migrate_to_chat_id=state.migrated[chat],
            )
        if state.scripted[chat]:
            code, description, parameters = state.scripted[chat].popleft()
            return _error(code, description, **parameters)
        if state.flood_limit is not None:
            recent = [
                c
                for c in state.calls
                if c.method == "sendMessage"
                and str(c.params.get("chat_id")) == chat
                and now - c.at < 1.0
                and c.params.get("_accepted")
            ]
            if len(recent) >= state.flood_limit:
                state.flood_answers += 1
                return _error(429, "Too Many Requests: retry after 1", retry_after=1)
        state.calls[-1].params["_accepted"] = True
        state.next_message_id += 1
        message_id = state.next_message_id
        state.messages[chat].append((message_id, params))
        hold = state.holds.get(chat)
        arrived = state.held.pop(chat, None)
        late = state.late[chat].popleft() if state.late[chat] else 0.0
    if arrived is not None:
        arrived.set()
    if hold is not None:
        hold.wait(timeout=60)
    if late:
        time.sleep(late)
    result = {
        "message_id": message_id,
        "chat": {"id": params.get("chat_id")},
        "date": int(time.time()),
    }
    if "text" in params:
        result["text"] = params["text"]
    return 200, {"ok": True, "result": result}
