"""Publishing a turn's reply tokens on Redis pub/sub (the worker side of :mod:`.stream`)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from nekoflow.turns.stream import TokenMessage, channel

log = logging.getLogger(__name__)

IDLE_SECONDS = 0.25
"""While no one listens, the kept text is offered again this often."""
DOWN_SECONDS = 30.0
"""After a Redis error, publishing is skipped for this long (the turn goes on)."""


PublishFn = Callable[[str, str], int]
"""PUBLISH: (channel, payload) → number of subscribers reached; raises on Redis errors."""


class TokenWriter:
    """The ``on_delta`` sink of one LLM attempt: coalesces pieces and publishes them.

    Pure apart from the injected ``publish`` and ``clock``; never raises from Redis errors.
    """

    def __init__(
        self,
        publish: PublishFn,
        channel_name: str,
        attempt: int,
        *,
        flush_seconds: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        self._publish = publish
        self.channel = channel_name
        self.attempt = attempt
        self.flush_seconds = flush_seconds
        self._clock = clock
        self._on_error = on_error
        self._parts: list[str] = []
        self._text = ""
        self.sent = 0  # characters some subscriber received
        self.seq = 0
        self._due = float("-inf")
        self.dead = False
        self.published = 0
        self.heard = False  # some publish reached a subscriber
        self._unheard = -1  # length of the text last offered to nobody (-1: none)

    def __call__(self, delta: str) -> None:
        """Take the next piece of the reply (published now or with the next ones)."""
        if not delta:
            return
        self._parts.append(delta)
        if not self.dead and self._clock() >= self._due:
            self._flush(end=False)

    def _current(self) -> str:
        if self._parts:
            self._text += "".join(self._parts)
            self._parts.clear()
        return self._text

    def _send(self, message: TokenMessage) -> int | None:
        try:
            reached = self._publish(self.channel, message.to_json())
        except Exception as exc:
            self.dead = True
            if self._on_error is not None:
                self._on_error(exc)
            return None
        self.seq += 1
        self.published += 1
        return int(reached or 0)

    def _flush(self, *, end: bool) -> None:
        text = self._current()
        if self.sent >= len(text) and not end:
            return
        now = self._clock()
        reached = self._send(
            TokenMessage(self.attempt, self.seq, self.sent, text[self.sent :], end)
        )
        if reached is None:
            return
        if reached:
            self.sent = len(text)
            self.heard = True
            self._unheard = -1
            self._due = now + self.flush_seconds
        else:  # nobody listens: keep the text for a late subscriber, offer it again later
            self._unheard = len(text)
            self._due = now + max(self.flush_seconds, IDLE_SECONDS)

    def finish(self) -> None:
        """The model finished: publish what is left, marked ``end`` (not when the whole text
        was just offered to nobody: no one is there to read the end)."""
        if not self.dead and self._unheard != len(self._current()):
            self._flush(end=True)

    def abort(self) -> None:
        """The attempt failed: tell subscribers to discard its text (when some heard any)."""
        if not self.dead and self.heard:
            self._send(TokenMessage(self.attempt, self.seq, 0, "", reset=True))


class TokenPublisher:
    """Makes :class:`TokenWriter` s publishing on one Redis server (a lazy client per process)."""

    def __init__(self, url: str, prefix: str, flush_seconds: float = 0.05) -> None:
        self.url = url
        self.prefix = prefix
        self.flush_seconds = flush_seconds
        self._client: Any = None
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._outage = False

    def _redis(self) -> Any:
        with self._lock:
            if self._client is None:
                from nekoflow.redis_client import make_redis

                # fail fast: a dead Redis must not slow the model call that feeds the stream
                self._client = make_redis(
                    self.url, socket_timeout=1.0, connect_timeout=0.5, retries=0
                )
            return self._client

    def _publish(self, channel_name: str, payload: str) -> int:
        reached = int(self._redis().publish(channel_name, payload))
        if self._outage:
            self._outage = False
            log.info("reply tokens streamed again: Redis is back")
        return reached

    def _failed(self, turn_id: str, exc: Exception) -> None:
        with self._lock:
            first = not self._outage
            self._outage = True
            self._down_until = time.monotonic() + DOWN_SECONDS
        if first:  # once per outage; tried again every DOWN_SECONDS
            log.warning(
                "turn %s: reply tokens not streamed, Redis unavailable (%s); turns go on",
                turn_id,
                type(exc).__name__,
            )

    def writer(self, turn_id: str, attempt: int) -> TokenWriter | None:
        """The sink for ``attempt`` of ``turn_id``; None while Redis is known to be down."""
        if time.monotonic() < self._down_until:
            return None
        return TokenWriter(
            self._publish,
            channel(self.prefix, turn_id),
            attempt,
            flush_seconds=self.flush_seconds,
            on_error=lambda exc: self._failed(turn_id, exc),
        )


_publishers: dict[tuple[str, str, float], TokenPublisher] = {}
_publishers_lock = threading.Lock()


def publisher_for(settings: Any) -> TokenPublisher | None:
    """The token publisher of ``settings`` when streaming is on and Redis is configured."""
    if not getattr(settings, "llm_stream", False) or not settings.redis_configured:
        return None
    flush = float(settings.llm_stream_flush_ms) / 1000.0
    key = (settings.redis_url, settings.redis_prefix, flush)
    with _publishers_lock:
        if key not in _publishers:
            _publishers[key] = TokenPublisher(settings.redis_url, settings.redis_prefix, flush)
        return _publishers[key]
