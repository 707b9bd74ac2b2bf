"""Redis pub/sub event bus: publish events to ``{prefix}:events:{type}`` for other processes."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence

import redis

from nekoflow.events import Event

log = logging.getLogger(__name__)


class RedisEventBus:
    """Publishes each event as JSON; a Redis outage is logged, never raised into the pipeline."""

    def __init__(self, client: redis.Redis, *, prefix: str = "nekoflow") -> None:
        self._r = client
        self.prefix = prefix

    def channel(self, event_type: str) -> str:
        """The pub/sub channel for an event type."""
        return f"{self.prefix}:events:{event_type}"

    def emit(self, event: Event) -> None:
        """Publish ``event``; returns silently (after logging) if Redis is unreachable."""
        try:
            self._r.publish(self.channel(event.type), event.to_json())
        except redis.RedisError:
            log.warning("could not publish %s to Redis", event.type, exc_info=True)

    def emit_many(self, events: Sequence[Event]) -> None:
        """Publish ``events`` in order in one round trip (a pipeline, not a transaction);
        returns silently (after logging) if Redis is unreachable."""
        try:
            pipe = self._r.pipeline(transaction=False)
            for event in events:
                pipe.publish(self.channel(event.type), event.to_json())
            pipe.execute()
        except redis.RedisError:
            log.warning("could not publish %d events to Redis", len(events), exc_info=True)

    def subscribe(self, pattern: str = "*") -> RedisSubscription:
        """Start receiving events whose type matches ``pattern`` (shell wildcards).

        The subscription is active when this returns, so nothing emitted afterwards is missed.
        """
        pubsub = self._r.pubsub(ignore_subscribe_messages=True)
        pubsub.psubscribe(self.channel(pattern))
        # Wait for the subscribe confirmation so the subscription is live on return.
        pubsub.get_message(timeout=1.0, ignore_subscribe_messages=False)
        return RedisSubscription(pubsub)


class RedisSubscription:
    """Events arriving on a pattern subscription; use as a context manager or iterate."""

    def __init__(self, pubsub: redis.client.PubSub) -> None:
        self._pubsub = pubsub

    def get(self, timeout: float = 1.0) -> Event | None:
        """The next event, or None when none arrives within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            msg = self._pubsub.get_message(timeout=remaining)
            if msg is None or msg.get("type") not in ("pmessage", "message"):
                continue
            try:
                return Event.from_json(msg["data"])
            except ValueError:
                log.warning("ignoring malformed event on %s", msg.get("channel"))

    def __iter__(self) -> Iterator[Event]:
        """Yield events until one second passes with none."""
        while (event := self.get()) is not None:
            yield event

    def close(self) -> None:
        """Stop receiving."""
        self._pubsub.close()

    def __enter__(self) -> RedisSubscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
