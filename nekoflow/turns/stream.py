"""Reply tokens over Redis pub/sub: ``llm_call`` publishes, the Web SSE and adapters subscribe.

While the model streams its reply, ``llm_call`` publishes the pieces on
``{prefix}:turn-tokens:{turn_id}`` (never the broker, never stored, never logged). Each message is
a JSON object ``{"attempt", "seq", "offset", "text", "end", "reset"}``: ``attempt`` is the turn's
LLM attempt (a retry restarts the stream), ``seq`` counts the attempt's messages, ``offset`` is
where ``text`` starts in the attempt's reply, ``end`` marks the attempt's last message (the model
finished) and ``reset`` says the attempt failed: discard its text (another attempt follows, or
the turn fails).

Publishing costs little: pieces arriving within ``flush_ms`` of the last publish go out together
(the first piece never waits); while nobody listens (PUBLISH reaches 0 subscribers) the text is
kept and offered again every ``IDLE_SECONDS`` from the same offset, so a late subscriber
still gets the reply from its start. A subscriber joining while others already listen may see
an ``offset`` past what it has (it missed the start); the stored reply is always complete.
Redis errors never reach the turn: the stream is skipped (logged once per outage).

Publishing lives in :mod:`nekoflow.turns.stream_publish`. Subscribing: :class:`TokenFollower`
turns messages into ``token``/``reset`` events (pure);
:func:`follow` (sync, for adapters; ``TurnHandle.tokens`` uses it) and :func:`follow_async`
(asyncio, for the SSE endpoint) subscribe to a turn's tokens and its end in one connection.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

log = logging.getLogger(__name__)

RECHECK_SECONDS = 1.0
"""A follower re-checks the turn's end this often even without a notification."""
END_WAIT_SECONDS = 0.2
"""Once the turn reads as ended, how long a follower waits for the end notice (every piece is
published before it, so the notice is the barrier after which nothing is left to send)."""


def channel(prefix: str, turn_id: str) -> str:
    """The pub/sub channel of one turn's reply tokens."""
    return f"{prefix}:turn-tokens:{turn_id}"


# ------------------------------------------------------------------------------- messages


@dataclass(frozen=True)
class TokenMessage:
    """One published message of a turn's token stream."""

    attempt: int
    seq: int
    offset: int
    text: str = ""
    end: bool = False
    reset: bool = False

    def to_json(self) -> str:
        """The wire form (compact JSON)."""
        body: dict[str, Any] = {"attempt": self.attempt, "seq": self.seq, "offset": self.offset}
        body["text"] = self.text
        if self.end:
            body["end"] = True
        if self.reset:
            body["reset"] = True
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def parse(cls, raw: str | bytes) -> TokenMessage | None:
        """The message in ``raw``, or None when it is not one (ignored by subscribers)."""
        try:
            body = json.loads(raw)
            return cls(
                attempt=int(body["attempt"]),
                seq=int(body["seq"]),
                offset=int(body["offset"]),
                text=str(body.get("text") or ""),
                end=bool(body.get("end")),
                reset=bool(body.get("reset")),
            )
        except (ValueError, TypeError, KeyError):
            return None


# ------------------------------------------------------------------------------- following


@dataclass(frozen=True)
class StreamEvent:
    """What a follower sees: new reply text, a reset (discard the text so far), or the end."""

    kind: Literal["token", "reset", "finished"]
    attempt: int = 0
    seq: int = 0
    offset: int = 0
    text: str = ""
    end: bool = False
    status: str = ""

    def data(self) -> dict[str, Any]:
        """The JSON body of the SSE event for this event."""
        if self.kind == "reset":
            return {"attempt": self.attempt}
        if self.kind == "finished":
            return {"status": self.status}
        body: dict[str, Any] = {"attempt": self.attempt, "seq": self.seq, "offset": self.offset}
        body["text"] = self.text
        if self.end:
            body["end"] = True
        return body


class TokenFollower:
    """Turns a turn's token messages into events: new text only (resends are trimmed), and a
    ``reset`` when an attempt whose text was shown failed or a newer attempt starts."""

    def __init__(self) -> None:
        self.attempt = 0
        self.length = 0  # characters of the current attempt handed out

    def feed(self, message: TokenMessage) -> list[StreamEvent]:
        """The events ``message`` produces (stale attempts produce none)."""
        if message.attempt < self.attempt:
            return []
        events: list[StreamEvent] = []
        if message.attempt > self.attempt:
            if self.length:
                events.append(StreamEvent("reset", attempt=message.attempt))
            self.attempt, self.length = message.attempt, 0
        if message.reset:
            if self.length:
                events.append(StreamEvent("reset", attempt=message.attempt))
            self.length = 0
            self.attempt = message.attempt + 1  # nothing more of this attempt is wanted
            return events
        text, offset = message.text, message.offset
        if offset < self.length:  # a resend of text already handed out
            text = text[self.length - offset :]
            offset = self.length
        if text or message.end:
            events.append(
                StreamEvent(
                    "token",
                    attempt=message.attempt,
                    seq=message.seq,
                    offset=offset,
                    text=text,
                    end=message.end,
                )
            )
            self.length = max(self.length, offset + len(text))
        return events


def _finished_channel(prefix: str, turn_id: str) -> str:
    from nekoflow.turns.notify import channel as finished_channel

    return finished_channel(prefix, turn_id)


def _decode(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _kind(message: Any, tokens: str) -> Literal["none", "other", "token", "end"]:
    """What a pub/sub read gave: nothing, a (un)subscribe confirmation, a token, the end."""
    if message is None:
        return "none"
    if message.get("type") != "message":
        return "other"
    return "token" if _decode(message.get("channel")) == tokens else "end"


def follow(
    url: str,
    prefix: str,
    turn_id: str,
    finished: Callable[[], str | None],
    timeout: float,
) -> Iterator[StreamEvent]:
    """Yield a turn's ``token``/``reset`` events, then one ``finished`` event (status from
    ``finished()``, a function reading the turn: its final status or None while it runs).

    Subscribes before the first ``finished()`` call, so nothing slips between the two; ends
    without ``finished`` after ``timeout`` seconds. Without Redis it only waits for the end.
    """
    from nekoflow.redis_client import make_redis

    deadline = time.monotonic() + timeout
    tokens = channel(prefix, turn_id)
    follower = TokenFollower()
    pubsub: Any = None
    client = make_redis(url)
    try:
        try:
            pubsub = client.pubsub()
            pubsub.subscribe(tokens, _finished_channel(prefix, turn_id))
        except Exception:
            pubsub = None
        status = finished()
        ran = status is None  # it ran after we subscribed: pieces may be on their way
        ended = False
        while status is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            message = None
            if pubsub is not None:
                try:
                    message = pubsub.get_message(timeout=min(remaining, RECHECK_SECONDS))
                except Exception:
                    pubsub = None
            else:
                time.sleep(min(remaining, 0.2))
            kind = _kind(message, tokens)
            if kind == "token":
                parsed = TokenMessage.parse(message["data"])
                if parsed is not None:
                    yield from follower.feed(parsed)
                continue  # drain queued tokens before reading the database again
            if kind == "other":
                continue
            ended = ended or kind == "end"
            status = finished()
        end_by = time.monotonic() + END_WAIT_SECONDS
        while ran and pubsub is not None:  # pieces on their way come before the end notice
            try:
                wait = 0.0 if ended else max(0.0, end_by - time.monotonic())
                message = pubsub.get_message(timeout=wait)
            except Exception:
                break
            kind = _kind(message, tokens)
            if kind == "none":
                break
            ended = ended or kind == "end"
            if kind == "token":
                parsed = TokenMessage.parse(message["data"])
                if parsed is not None:
                    yield from follower.feed(parsed)
        yield StreamEvent("finished", status=status)
    finally:
        with contextlib.suppress(Exception):
            if pubsub is not None:
                pubsub.close()
        with contextlib.suppress(Exception):
            client.close()


class AsyncTokenSubscription:
    """One turn's token stream and end notification on redis.asyncio, for an event loop.

    :meth:`open` subscribes (do it before reading the turn); :meth:`next` waits for one message.
    Redis errors turn the subscription off (``active`` False): callers then only poll.
    """

    def __init__(self, url: str, prefix: str, turn_id: str, *, end_notice: bool = True) -> None:
        self.url = url
        #: Whether workers announce the turn's end on Redis (a Redis broker): then
        #: :meth:`drain` waits for that notice; else it reads what is there.
        self.end_notice = end_notice
        self.tokens = channel(prefix, turn_id)
        self.finished_channel = _finished_channel(prefix, turn_id)
        self.follower = TokenFollower()
        self.ended = False  # the turn's end notice was read
        self._client: Any = None
        self._pubsub: Any = None

    @property
    def active(self) -> bool:
        """Whether messages can arrive (subscribed, no Redis error since)."""
        return self._pubsub is not None

    async def open(self) -> AsyncTokenSubscription:
        """Subscribe to the turn's tokens and end (a Redis error leaves it inactive)."""
        import redis.asyncio as aioredis

        try:
            self._client = aioredis.Redis.from_url(self.url, socket_connect_timeout=2.0)
            pubsub = self._client.pubsub()
            await pubsub.subscribe(self.tokens, self.finished_channel)
            self._pubsub = pubsub
        except Exception as exc:
            log.info("token subscription unavailable (%s)", type(exc).__name__)
            await self.aclose()
        return self

    async def next(self, timeout: float) -> tuple[list[StreamEvent], bool]:
        """Wait up to ``timeout`` s for one message: (its token/reset events, whether the turn's
        end was announced). Inactive: sleeps ``timeout`` and returns nothing."""
        import asyncio

        if self._pubsub is None:
            await asyncio.sleep(max(0.0, timeout))
            return [], False
        try:
            message = await self._pubsub.get_message(timeout=max(0.0, timeout))
        except Exception:
            await self.aclose()
            return [], False
        kind = _kind(message, self.tokens)
        if kind != "token":
            self.ended = self.ended or kind == "end"
            return [], kind == "end"
        parsed = TokenMessage.parse(message["data"])
        return (self.follower.feed(parsed) if parsed is not None else []), False

    async def drain(self) -> list[StreamEvent]:
        """The events of the pieces still on their way once the turn has ended: read up to the
        end notice (at most ``END_WAIT_SECONDS``), so no piece published before it is lost."""
        drained: list[StreamEvent] = []
        end_by = time.monotonic() + END_WAIT_SECONDS
        for _ in range(100_000):
            if self._pubsub is None:
                break
            try:
                waiting = self.end_notice and not self.ended
                wait = max(0.0, end_by - time.monotonic()) if waiting else 0.0
                message = await self._pubsub.get_message(timeout=wait)
            except Exception:
                break
            kind = _kind(message, self.tokens)
            if kind == "none":
                break
            self.ended = self.ended or kind == "end"
            if kind == "token":
                parsed = TokenMessage.parse(message["data"])
                drained += self.follower.feed(parsed) if parsed is not None else []
        return drained

    async def aclose(self) -> None:
        """Unsubscribe and close the connection."""
        pubsub, client, self._pubsub, self._client = self._pubsub, self._client, None, None
        with contextlib.suppress(Exception):
            if pubsub is not None:
                await pubsub.aclose()
        with contextlib.suppress(Exception):
            if client is not None:
                await client.aclose()


async def follow_async(
    url: str,
    prefix: str,
    turn_id: str,
    finished: Callable[[], Awaitable[str | None]],
    timeout: float,
) -> AsyncIterator[StreamEvent]:
    """:func:`follow` for asyncio code (``finished`` is awaited)."""
    deadline = time.monotonic() + timeout
    sub = await AsyncTokenSubscription(url, prefix, turn_id).open()
    try:
        status = await finished()
        ran = status is None  # it ran after we subscribed: pieces may be on their way
        checked = time.monotonic()
        while status is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            events, ended = await sub.next(min(remaining, RECHECK_SECONDS))
            for event in events:
                yield event
            if events and not ended and time.monotonic() - checked < RECHECK_SECONDS:
                continue
            status = await finished()
            checked = time.monotonic()
        for event in await sub.drain() if ran else []:
            yield event
        yield StreamEvent("finished", status=status)
    finally:
        await sub.aclose()
