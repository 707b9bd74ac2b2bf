"""Events and event buses: the pipeline's way of telling observers what happened.

An event bus is any object with ``emit(event)``. :class:`InProcessEventBus` calls subscribers
synchronously and isolates their failures (a broken subscriber never breaks a turn);
:class:`nekoflow.events_redis.RedisEventBus` publishes to Redis pub/sub for other processes.
"""

from __future__ import annotations

import fnmatch
import logging
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

log = logging.getLogger(__name__)


class Event(BaseModel):
    """Something that happened: ``type`` (dotted name), source, the ids it concerns, a payload."""

    model_config = ConfigDict(frozen=True)

    type: str
    source: str = "nekoflow"
    conversation_id: str | None = None
    character_id: str | None = None
    user_id: str | None = None
    group_id: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    timestamp: datetime = Field(default_factory=lambda: datetime.now(UTC))

    def to_json(self) -> str:
        """The event as a JSON document (for Redis, logs, SSE)."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, data: str | bytes) -> Event:
        """Parse an event published by :meth:`to_json`."""
        return cls.model_validate_json(data)


@runtime_checkable
class EventBus(Protocol):
    """Anything events can be emitted to."""

    def emit(self, event: Event) -> None:
        """Deliver ``event``; must not raise because of a subscriber's failure."""
        ...


Handler = Callable[[Event], None]


class NullEventBus:
    """Discards every event."""

    def emit(self, event: Event) -> None:
        """Do nothing."""


class InProcessEventBus:
    """Synchronous in-process pub/sub; patterns use shell wildcards (``review.*``, ``*``)."""

    def __init__(self) -> None:
        self._subs: list[tuple[str, Handler]] = []
        self._lock = threading.Lock()

    def subscribe(self, pattern: str, handler: Handler) -> Callable[[], None]:
        """Call ``handler`` for events whose type matches ``pattern``; returns an unsubscribe."""
        entry = (pattern, handler)
        with self._lock:
            self._subs.append(entry)

        def unsubscribe() -> None:
            with self._lock:
                if entry in self._subs:
                    self._subs.remove(entry)

        return unsubscribe

    def emit(self, event: Event) -> None:
        """Call every matching subscriber in subscription order; log and swallow their errors."""
        with self._lock:
            subs = list(self._subs)
        for pattern, handler in subs:
            if fnmatch.fnmatchcase(event.type, pattern):
                try:
                    handler(event)
                except Exception:
                    log.exception("event subscriber %r failed on %s", handler, event.type)


class RecordingEventBus(InProcessEventBus):
    """An in-process bus that also keeps every event it saw (handy for tests and the demo)."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        """Record, then deliver."""
        self.events.append(event)
        super().emit(event)

    @property
    def types(self) -> list[str]:
        """The types of the recorded events, in order."""
        return [e.type for e in self.events]


class FanoutEventBus:
    """Emits every event to several buses (e.g. in-process subscribers and Redis)."""

    def __init__(self, *buses: EventBus) -> None:
        self.buses = list(buses)

    def emit(self, event: Event) -> None:
        """Emit to each bus; one bus failing does not stop the others."""
        for bus in self.buses:
            try:
                bus.emit(event)
            except Exception:
                log.exception("event bus %r failed on %s", bus, event.type)
