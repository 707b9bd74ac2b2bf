"""Feishu's long-connection (WebSocket) event mode, for apps without a public request URL.

Protocol (as the official SDKs speak it): ``POST {base}/callback/ws/endpoint`` with
``{"AppID", "AppSecret"}`` answers ``{"code": 0, "data": {"URL", "ClientConfig"}}``; the URL's
query names the ``device_id`` and ``service_id``. On the socket every message is a binary
:class:`~nekoflow.platforms.feishu.frame.Frame`: the client pings (control frame ``type=ping``)
every ``PingInterval`` seconds and the server's ``pong`` may carry a new ClientConfig; a data
frame ``type=event`` carries one event's JSON (split in ``sum`` parts when large) and is answered
with the same frame whose payload is ``{"code": 200}`` (500 when the event could not be stored:
Feishu pushes it again) plus a ``biz_rt`` header. The connection itself is authenticated, so
events are neither encrypted nor signed. After a drop the client reconnects after a random
``ReconnectNonce`` jitter, then every ``ReconnectInterval`` seconds, giving up after
``ReconnectCount`` failed tries (-1: never). Feishu pushes each event to one of the app's
connections (at most 50) and expects the answer within 3 seconds.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from nekoflow.errors import InputError
from nekoflow.platforms.feishu.frame import (
    CONTROL,
    DATA,
    Frame,
    FrameError,
    Reassembler,
    ping_frame,
)
from nekoflow.platforms.feishu.settings import FeishuApp
from nekoflow.platforms.runtime import reason

log = logging.getLogger(__name__)

ENDPOINT_PATH = "/callback/ws/endpoint"
#: Endpoint codes worth retrying: system busy, internal error.
RETRY_CODES = frozenset({1, 1000040343})
_KNOWN = {
    403: "forbidden",
    514: "authentication failed",
    1000040344: "app id or secret missing",
    1000040350: "too many connections for this app (50 at most)",
    10003: "app id or secret refused",
    10014: "app id or secret refused",
}
_RECENT = 1024

Submit = Callable[[dict[str, Any]], Any]
"""Stores one event (a parsed JSON object) as a turn; raises when it could not be stored."""


class EndpointRefused(Exception):
    """Feishu refused the app for good (credentials, permissions): reconnecting will not help."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Reconnect(Exception):
    """The connection could not be opened or must be dropped; try again later."""


@dataclass
class ClientConfig:
    """The server's connection settings (seconds), from the endpoint answer or a pong."""

    reconnect_count: int = -1
    reconnect_interval: float = 120.0
    reconnect_nonce: float = 30.0
    ping_interval: float = 120.0

    def update(self, data: Any) -> None:
        """Take the fields of a ``ClientConfig`` object that are valid numbers."""
        if not isinstance(data, dict):
            return
        for key, attr, low in (
            ("ReconnectCount", "reconnect_count", -1),
            ("ReconnectInterval", "reconnect_interval", 0),
            ("ReconnectNonce", "reconnect_nonce", 0),
            ("PingInterval", "ping_interval", 0.05),
        ):
            value = data.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool) and value >= low:
                setattr(self, attr, int(value) if attr == "reconnect_count" else float(value))


def reconnect_delay(
    attempt: int, config: ClientConfig, rand: Callable[[], float] = random.random
) -> float:
    """Seconds to wait before reconnect try ``attempt`` (1-based): a random jitter of up to
    ``reconnect_nonce`` before the first, ``reconnect_interval`` before each next one."""
    if attempt <= 1:
        return rand() * config.reconnect_nonce
    return config.reconnect_interval


def fetch_endpoint(
    http: httpx.Client, base_url: str, app: FeishuApp, config: ClientConfig
) -> tuple[str, int]:
    """(WebSocket URL, service id) for ``app``; updates ``config`` from the answer."""
    body = {"AppID": app.app_id, "AppSecret": app.app_secret.get_secret_value()}
    try:
        resp = http.post(base_url + ENDPOINT_PATH, json=body, headers={"locale": "zh"})
    except httpx.TimeoutException:
        raise Reconnect("endpoint: timeout") from None
    except httpx.TransportError:
        raise Reconnect("endpoint: connection error") from None
    if resp.status_code != 200:
        raise Reconnect(f"endpoint: HTTP {resp.status_code}")
    try:
        answer = resp.json()
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise Reconnect("endpoint: answer is not a JSON object")
    code = answer.get("code")
    if code != 0:
        if code in RETRY_CODES:
            raise Reconnect(f"endpoint: error {code} (busy)")
        words = _KNOWN.get(code) if isinstance(code, int) else None
        raise EndpointRefused(
            f"feishu long connection refused for app {app.name}: error {code}"
            + (f" ({words})" if words else "")
            + "; check app_id and app_secret, and that the app is a self-built app"
        )
    data = answer.get("data") if isinstance(answer.get("data"), dict) else {}
    config.update(data.get("ClientConfig"))
    url = data.get("URL")
    if not isinstance(url, str) or not url.startswith(("ws://", "wss://")):
        raise Reconnect("endpoint: no WebSocket URL in the answer")
    service = parse_qs(urlparse(url).query).get("service_id", [""])[0]
    try:
        return url, int(service)
    except ValueError:
        raise Reconnect("endpoint: no service_id in the URL") from None


def _event_id(payload: dict[str, Any]) -> str | None:
    header = payload.get("header")
    raw = header.get("event_id") if isinstance(header, dict) else payload.get("uuid")
    return raw if isinstance(raw, str) and raw else None


class FeishuLongConnection:
    """Holds one app's long connection, storing each event through ``submit``."""

    def __init__(
        self,
        app: FeishuApp,
        submit: Submit,
        *,
        base_url: str = "https://open.feishu.cn",
        timeout: float = 15.0,
        connect_timeout: float = 5.0,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.app = app
        self.submit = submit
        self.base_url = base_url.rstrip("/")
        self.config = ClientConfig()
        self.parts = Reassembler()
        self.rand = rand
        self._timeout = timeout
        self._http = httpx.Client(timeout=httpx.Timeout(timeout, connect=connect_timeout))
        self._recent: OrderedDict[str, None] = OrderedDict()
        #: Connections opened, events stored, pongs received; why the connection gave up.
        self.connections = 0
        self.handled = 0
        self.pongs = 0
        self.error: str | None = None

    # --- frames ---------------------------------------------------------------------------

    def handle_frame(self, frame: Frame) -> Frame | None:
        """The frame to send back for ``frame`` (the ack of an event), or None."""
        kind = frame.header("type")
        if frame.method == CONTROL:
            if kind == "pong":
                self.pongs += 1
                if frame.payload:
                    try:
                        self.config.update(json.loads(frame.payload))
                    except ValueError:
                        log.warning("feishu %s: pong with a bad ClientConfig", self.app.name)
            return None
        if frame.method != DATA:
            return None
        try:
            total = int(frame.header("sum") or "1")
            seq = int(frame.header("seq") or "0")
        except ValueError:
            raise FrameError("header sum/seq: not a number") from None
        payload = self.parts.add(frame.header("message_id") or "", total, seq, frame.payload or b"")
        if payload is None:
            return None  # more parts to come; the last one is answered
        if kind != "event":
            return None  # card callbacks are not used by nekoflow (the SDK ignores them too)
        started = time.monotonic()
        return frame.ack(self.process(payload), started)

    def process(self, raw: bytes) -> int:
        """Store one event; the code for the ack (500: not stored, Feishu will push it again)."""
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            log.warning("feishu %s: event ignored, not a JSON object", self.app.name)
            return 200
        event_id = _event_id(payload)
        if event_id is not None and event_id in self._recent:
            return 200  # pushed again (our answer was late): already stored
        try:
            self.submit(payload)
        except InputError as exc:
            log.warning("feishu %s: event ignored, bad field %s", self.app.name, exc.field)
            return 200
        except Exception as exc:
            log.error("feishu %s: could not store event (%s)", self.app.name, reason(exc))
            return 500
        self.handled += 1
        if event_id is not None:
            self._recent[event_id] = None
            while len(self._recent) > _RECENT:
                self._recent.popitem(last=False)
        return 200

    # --- the socket -----------------------------------------------------------------------

    def _open(self, url: str) -> ClientConnection:
        try:
            return connect(url, open_timeout=self._timeout, close_timeout=2, max_size=2**22)
        except InvalidStatus as exc:
            headers = exc.response.headers
            status = headers.get("handshake-status")
            auth = headers.get("handshake-autherrcode")
            if status == "403" or (status == "514" and auth == "1000040350"):
                words = _KNOWN[403 if status == "403" else 1000040350]
                raise EndpointRefused(
                    f"feishu long connection refused for app {self.app.name}: {words}"
                ) from None
            raise Reconnect(f"handshake refused (HTTP {exc.response.status_code})") from None

    def run_once(self, stop: threading.Event) -> None:
        """One connection: endpoint → socket → pings, events and acks until a drop or ``stop``."""
        url, service = fetch_endpoint(self._http, self.base_url, self.app, self.config)
        with self._open(url) as ws:
            self.connections += 1
            log.info("feishu %s: long connection open", self.app.name)
            next_ping = time.monotonic()
            while not stop.is_set():
                now = time.monotonic()
                if now >= next_ping:
                    ws.send(ping_frame(service).encode())
                    next_ping = now + self.config.ping_interval
                try:
                    raw = ws.recv(timeout=min(max(0.0, next_ping - now), 1.0))
                except TimeoutError:
                    continue
                if not isinstance(raw, bytes):
                    continue  # the protocol is binary frames only
                try:
                    answer = self.handle_frame(Frame.decode(raw))
                except FrameError as exc:
                    log.warning("feishu %s: bad frame ignored (%s)", self.app.name, exc)
                    continue
                if answer is not None:
                    ws.send(answer.encode())

    def run(self, stop: threading.Event) -> None:
        """Keep the connection until ``stop`` or a permanent refusal (``self.error``)."""
        try:
            self._run(stop)
        finally:
            self._http.close()

    def _run(self, stop: threading.Event) -> None:
        attempt = 0
        while not stop.is_set():
            opened = self.connections
            try:
                self.run_once(stop)
            except EndpointRefused as exc:
                self.error = exc.reason
                log.error("%s", exc.reason)
                return
            except (Reconnect, ConnectionClosed, OSError, TimeoutError) as exc:
                log.warning("feishu %s: long connection dropped (%s)", self.app.name, _why(exc))
            except Exception as exc:
                log.error("feishu %s: long connection error %s", self.app.name, type(exc).__name__)
            if stop.is_set():
                return
            attempt = 1 if self.connections > opened else attempt + 1
            count = self.config.reconnect_count
            if count >= 0 and attempt > count:
                self.error = f"feishu {self.app.name}: gave up after {count} reconnect tries"
                log.error("%s", self.error)
                return
            stop.wait(reconnect_delay(attempt, self.config, self.rand))


def _why(exc: Exception) -> str:
    return str(exc) if isinstance(exc, Reconnect) else type(exc).__name__
