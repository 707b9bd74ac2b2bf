"""``nekoflow gateway onebot``: the reverse WebSocket server NapCat / Lagrange / go-cqhttp
connect to, and the hand-over of replies from the workers to those sockets.

In: a bot connects to ``ws://{ws_host}:{ws_port}{ws_path}`` with ``X-Self-ID``,
``X-Client-Role`` (Universal, Event or API) and ``Authorization: Bearer <access_token>`` (or
``?access_token=``); an unknown self id or wrong token is refused in the handshake (401 missing,
403 wrong). Message events become turns (``enqueue_turn("qq", event, bot=self_id)``); meta
events (heartbeat, lifecycle) and action responses are not turns.

Out: deliver tasks queue each chunk's ``send_msg`` in the bot's Redis stream (see
:mod:`nekoflow.platforms.onebot.sender`). While a bot's Universal/API socket is connected, the
gateway reads that stream in the consumer group ``gateway``, sends each action with
``echo`` = the chunk key, waits for the response, records it in the outbox (``confirm_sent``
with the message id, ``confirm_failed``, or ``confirm_unknown`` for an implementation-defined
failure retcode, which does not say the message was not sent) and only then acknowledges the
entry. After a restart it first re-reads its unacknowledged entries, skipping chunks the outbox
already records as sent, failed or unknown. Entries wait in the stream while the bot is
offline. Limit: an action whose echo was lost (gateway killed or socket dropped after sending,
before the answer was recorded) is sent again when the bot reconnects — OneBot has no
idempotency key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

import redis
from sqlalchemy import text
from sqlalchemy.engine import Engine
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from nekoflow.delivery import outbox
from nekoflow.delivery.settings import get_delivery_settings
from nekoflow.delivery.tables import SETTLED
from nekoflow.errors import InputError
from nekoflow.platforms.onebot.guard import StoreGuard
from nekoflow.platforms.onebot.protocol import (
    bearer,
    client_role,
    is_meta,
    is_response,
    judge,
    token_matches,
)
from nekoflow.platforms.onebot.refusals import RECORD_SECONDS, refusal_key, refusal_record
from nekoflow.platforms.onebot.sender import stream_key
from nekoflow.platforms.onebot.settings import OneBotSettings
from nekoflow.platforms.runtime import RateLimited, is_unreachable, reason

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 10.0
"""How often a connected bot's heartbeat key is refreshed (it lives three times as long)."""


def heartbeat_key(prefix: str, self_id: str) -> str:
    """The Redis key present while bot ``self_id`` has a socket open (``nekoflow doctor``)."""
    return f"{prefix}:onebot:connected:{self_id}"


GROUP = "gateway"
CONSUMER = "gateway"
MAX_RETRIES = 5

Submit = Callable[[dict[str, Any], str], Any]
"""(event, self id) → stores the event as a turn (``enqueue_turn``)."""


def chunk_status(engine: Engine, key: str) -> str | None:
    """The outbox status of chunk ``key`` (None: no such row)."""
    try:
        turn_id, index = outbox.parse_key(key)
    except ValueError:
        return None
    row = next((r for r in outbox.rows_for(engine, turn_id) if r.idx == index), None)
    if row is None:
        return None
    return str(getattr(row.status, "value", row.status))


class OneBotGateway:
    """Accepts bots' reverse WebSockets, submits their events, sends their queued replies."""

    def __init__(
        self,
        engine: Engine,
        client: redis.Redis,
        settings: OneBotSettings,
        submit: Submit,
        *,
        prefix: str = "nekoflow",
        resend_unconfirmed: bool | None = None,
    ) -> None:
        self.engine = engine
        self.redis = client
        self.settings = settings
        self.submit = submit
        self.prefix = prefix
        #: resend a chunk whose answer does not say whether it was sent (at least once)
        self.resend_unconfirmed = (
            get_delivery_settings().resend_unconfirmed
            if resend_unconfirmed is None
            else resend_unconfirmed
        )
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._refusals = RateLimited(log)
        self._tasks: set[asyncio.Task[None]] = set()
        self._connections: set[ServerConnection] = set()
        #: events cannot be stored now: held, bots kept away until they can
        self.guard = StoreGuard(self._probe, submit)
        self._closing: set[asyncio.Task[None]] = set()
        #: streams whose consumer group must be made (again) before the next read
        self._regroup: set[str] = set()
        self.sent = 0

    # -- handshake ---------------------------------------------------------------------------

    def check_handshake(self, connection: ServerConnection, request: Request) -> Response | None:
        """Refuse a wrong path, unknown self id, bad role or missing/wrong token (each refusal
        logged at WARNING with the reason and the peer, at most once a minute per peer and
        reason: an implementation retries every few seconds), and everyone with 503 while
        events cannot be stored."""
        if self.guard.down is not None:
            return self._refuse(
                connection,
                HTTPStatus.SERVICE_UNAVAILABLE,
                "cannot store events now, try again later",
                f"events cannot be stored: {self.guard.down}",
            )
        url = urlsplit(request.path)
        path = url.path.rstrip("/") or "/"
        if path != self.settings.ws_path:
            return self._refuse(
                connection,
                HTTPStatus.NOT_FOUND,
                "not a OneBot endpoint",
                f"wrong path {path[:80]!r} (NEKOFLOW_ONEBOT_WS_PATH is {self.settings.ws_path!r})",
            )
        self_id = (request.headers.get("X-Self-ID") or "").strip()
        config = self.settings.bot(self_id) if self_id else None
        token = bearer(request.headers.get("Authorization"))
        if token is None:
            token = (parse_qs(url.query).get("access_token") or [None])[0]
        expected = (
            config.access_token.get_secret_value() if config and config.access_token else None
        )
        shown_id = repr(self_id[:24]) if self_id else "(none)"
        if config is not None and expected is not None and token is None:
            return self._refuse(
                connection,
                HTTPStatus.UNAUTHORIZED,
                "access token missing",
                f"bot {shown_id} sent no access token",
            )
        if config is None or config.mode != "ws" or not token_matches(token, expected):
            if config is None:
                why = f"unknown X-Self-ID {shown_id} (not in NEKOFLOW_ONEBOT_SELF_ID/_BOTS)"
            elif config.mode != "ws":
                why = f"bot {shown_id} is configured with mode {config.mode!r}, not 'ws'"
            else:
                why = f"bot {shown_id} sent a wrong access token (NEKOFLOW_ONEBOT_ACCESS_TOKEN)"
            return self._refuse(
                connection, HTTPStatus.FORBIDDEN, "unknown X-Self-ID or wrong token", why
            )
        if client_role(request.headers.get("X-Client-Role")) is None:
            return self._refuse(
                connection, HTTPStatus.BAD_REQUEST, "bad X-Client-Role", "bad X-Client-Role"
            )
        return None

    def _refuse(
        self, connection: ServerConnection, status: HTTPStatus, body: str, why: str
    ) -> Response:
        """The refusal ``status`` (``body`` says little), logged with ``why`` and the peer."""
        peer = connection.remote_address
        host = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        where = f"{host}:{peer[1]}" if isinstance(peer, tuple) and len(peer) > 1 else host
        logged = self._refusals.log(
            logging.WARNING,
            f"{host} {status.value} {why}",
            "onebot handshake from %s refused (%d): %s",
            where,
            status.value,
            why,
        )
        if logged:  # for `nekoflow doctor`, as often as the log line (best effort)
            with contextlib.suppress(RuntimeError):  # no loop: nobody serves, nothing to keep
                task = asyncio.get_running_loop().create_task(self._remember(why, host))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        return connection.respond(status, body + "\n")

    async def _remember(self, why: str, peer: str) -> None:
        """Keep this refusal as the newest one in Redis (nothing on a Redis error)."""
        with contextlib.suppress(redis.RedisError):
            record = refusal_record(why, peer)
            key = refusal_key(self.prefix)
            await asyncio.to_thread(self.redis.set, key, record, ex=RECORD_SECONDS)

    # -- one connection ----------------------------------------------------------------------

    async def handle(self, connection: ServerConnection) -> None:
        """Read a connected bot's frames; run its reply sender while it can take actions."""
        assert connection.request is not None
        headers = connection.request.headers
        self_id = headers["X-Self-ID"].strip()
        role = client_role(headers.get("X-Client-Role")) or "universal"
        if self.guard.down is not None:  # the outage began during the handshake
            await connection.close(code=1013, reason="try again later")
            return
        log.info("onebot bot %s connected (%s)", self_id, role)
        self._connections.add(connection)
        sender = None
        if role in ("universal", "api"):
            sender = asyncio.create_task(self._send_loop(connection, self_id))
        beat = asyncio.create_task(self._heartbeat(self_id))
        try:
            async for raw in connection:
                await self._on_frame(raw, self_id, role)
        except ConnectionClosed:
            pass
        finally:
            self._connections.discard(connection)
            if sender is not None:
                sender.cancel()
                await asyncio.gather(sender, return_exceptions=True)
            beat.cancel()
            await asyncio.gather(beat, return_exceptions=True)
            log.info("onebot bot %s disconnected", self_id)

    async def _heartbeat(self, self_id: str) -> None:
        """Keep ``heartbeat_key`` set (TTL) while this socket is open; delete it at the end."""
        key = heartbeat_key(self.prefix, self_id)
        ttl = int(HEARTBEAT_SECONDS * 3)
        try:
            while True:
                try:
                    await asyncio.to_thread(self.redis.set, key, str(int(time.time())), ex=ttl)
                except redis.RedisError as exc:  # never drops the connection
                    log.warning("onebot bot %s: heartbeat not stored (%s)", self_id, exc)
                await asyncio.sleep(HEARTBEAT_SECONDS)
        finally:
            with contextlib.suppress(redis.RedisError):
                await asyncio.to_thread(self.redis.delete, key)

    async def _on_frame(self, raw: str | bytes, self_id: str, role: str) -> None:
        try:
            frame = json.loads(raw)
        except ValueError:
            log.warning("onebot bot %s: a frame that is not JSON, ignored", self_id)
            return
        if not isinstance(frame, dict):
            return
        if is_response(frame):
            echo = frame.get("echo")
            future = self._waiting.get(echo) if isinstance(echo, str) else None
            if future is not None and not future.done():
                future.set_result(frame)
            return
        if is_meta(frame) or role == "api":
            return
        if self.guard.down is not None:  # arrived on a socket being closed: keep it for later
            self.guard.hold(frame, self_id)
            return
        try:
            await asyncio.to_thread(self.submit, frame, self_id)
        except InputError as exc:
            log.warning("onebot bot %s: event ignored, bad field %s", self_id, exc.field)
        except Exception as exc:
            if is_unreachable(exc):  # the implementation won't resend: hold it, stop accepting
                self.guard.hold(frame, self_id)
                self._outage(exc)
            else:
                log.error("onebot bot %s: event not stored (%s)", self_id, reason(exc))

    # -- the database or Redis unreachable ---------------------------------------------------

    def _outage(self, exc: BaseException) -> None:
        """Stop accepting events until the database and Redis answer again: close every bot's
        socket (new ones are refused with 503 meanwhile)."""
        if self.guard.trip(exc):
            for conn in list(self._connections):
                task = asyncio.get_running_loop().create_task(
                    conn.close(code=1013, reason="try again later")
                )
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)

    def _probe(self) -> None:
        """Raise unless the database and Redis both answer."""
        self.redis.ping()
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    # -- replies -----------------------------------------------------------------------------

    def _ensure_group(self, stream: str) -> None:
        try:
            self.redis.xgroup_create(stream, GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def _read(self, stream: str, start: str, block: int | None) -> list[tuple[str, dict]]:
        answer = self.redis.xreadgroup(GROUP, CONSUMER, {stream: start}, count=20, block=block)
        out = []
        for _, entries in answer or []:
            for entry_id, fields in entries:
                decoded = {
                    (k.decode() if isinstance(k, bytes) else k): (
                        v.decode() if isinstance(v, bytes) else v
                    )
                    for k, v in fields.items()
                }
                out.append(
                    (entry_id.decode() if isinstance(entry_id, bytes) else entry_id, decoded)
                )
        return out

    def _ack(self, stream: str, entry_id: str) -> None:
        pipe = self.redis.pipeline()
        pipe.xack(stream, GROUP, entry_id)
        pipe.xdel(stream, entry_id)
        pipe.execute()

    async def _send_loop(self, connection: ServerConnection, self_id: str) -> None:
        """Send ``self_id``'s queued chunks in order: unacknowledged ones first, then new ones."""
        lock = self._locks.setdefault(self_id, asyncio.Lock())
        async with lock:  # one sender per bot, even when it reconnects before the old socket ends
            stream = stream_key(self.prefix, self_id)
            self._regroup.add(stream)
            start = "0"
            while True:
                try:
                    if stream in self._regroup:
                        await asyncio.to_thread(self._ensure_group, stream)
                        self._regroup.discard(stream)
                    entries = await asyncio.to_thread(
                        self._read, stream, start, None if start == "0" else 1000
                    )
                    if not entries:
                        # backlog done → new entries; idle → look at the backlog again (a read of
                        # a cancelled loop, e.g. before a reconnect, may have left entries there)
                        start = ">" if start == "0" else "0"
                        continue
                    for entry_id, fields in entries:
                        await self._deliver(connection, stream, entry_id, fields)
                except (ConnectionClosed, TimeoutError, asyncio.CancelledError):
                    raise
                except Exception as exc:  # Redis or the database hiccuped: entries stay pending
                    start = "0"
                    if isinstance(exc, redis.ResponseError) and "NOGROUP" in str(exc):
                        # Redis lost its data (restarted with nothing on disk, or flushed): the
                        # group went with it. Entries added since are in a new stream: read all
                        log.warning(
                            "onebot %s: consumer group %r gone (Redis lost its data?); re-made",
                            stream,
                            GROUP,
                        )
                        self._regroup.add(stream)
                        continue
                    log.error("onebot %s: %s; again from the backlog", stream, reason(exc))
                    if is_unreachable(exc):
                        self._outage(exc)
                    await asyncio.sleep(1.0)

    async def _deliver(
        self, connection: ServerConnection, stream: str, entry_id: str, fields: dict[str, str]
    ) -> None:
        key = fields.get("key", "")
        status = await asyncio.to_thread(chunk_status, self.engine, key)
        if status is None or status in SETTLED:
            await asyncio.to_thread(self._ack, stream, entry_id)  # done before (or not ours)
            return
        try:
            params = json.loads(fields.get("params", ""))
        except ValueError:
            await asyncio.to_thread(outbox.confirm_failed, self.engine, key, "bad hand-over")
            await asyncio.to_thread(self._ack, stream, entry_id)
            return
        for attempt in range(1, MAX_RETRIES + 1):
            future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            self._waiting[key] = future
            try:
                frame = {"action": "send_msg", "params": params, "echo": key}
                await connection.send(json.dumps(frame, ensure_ascii=False))
                try:
                    response = await asyncio.wait_for(future, self.settings.echo_timeout)
                except TimeoutError:
                    log.warning("onebot %s: no echo for chunk %s, reconnect needed", stream, key)
                    await connection.close(code=1011, reason="action timeout")
                    raise
            finally:
                self._waiting.pop(key, None)
            verdict = judge(response)
            if verdict.kind == "sent":
                await asyncio.to_thread(outbox.confirm_sent, self.engine, key, verdict.message_id)
                self.sent += 1
                break
            if verdict.kind == "unconfirmed" and not self.resend_unconfirmed:
                log.warning("onebot chunk %s: %s, not re-sent", key, verdict.reason)
                await asyncio.to_thread(outbox.confirm_unknown, self.engine, key, verdict.reason)
                break
            if verdict.kind == "failed" or attempt == MAX_RETRIES:
                reason = (
                    verdict.reason if verdict.kind == "failed" else f"gave up: {verdict.reason}"
                )
                await asyncio.to_thread(outbox.confirm_failed, self.engine, key, reason)
                break
            log.warning("onebot chunk %s: %s, retry %d", key, verdict.reason, attempt)
            await asyncio.sleep(min(2.0**attempt * 0.25, 10.0))
        await asyncio.to_thread(self._ack, stream, entry_id)

    # -- server ------------------------------------------------------------------------------

    async def serve(self, stop: asyncio.Event, ready: Callable[[int], None] | None = None) -> None:
        """Listen until ``stop`` is set; ``ready`` gets the bound port."""
        async with serve(
            self.handle,
            self.settings.ws_host,
            self.settings.ws_port,
            process_request=self.check_handshake,
            ping_interval=30,
            max_size=8 * 1024 * 1024,
        ) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            if ready is not None:
                ready(port)
            await stop.wait()
