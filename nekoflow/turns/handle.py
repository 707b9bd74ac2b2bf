"""TurnHandle: what ``enqueue_turn`` returns — the turn id, its status, and a way to wait."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from nekoflow.storage.turns import FINISHED, TurnRun, TurnStatus
from nekoflow.turns import store
from nekoflow.turns.notify import TurnNotifier

if TYPE_CHECKING:
    from nekoflow.turns.stream import StreamEvent


class TurnHandle:
    """A submitted (or skipped) turn. ``wait`` returns the rendered outbound messages.

    Skipped turns (disabled channel, no trigger, not a chat message) have no TurnRun row: their
    handle carries the status and the reason itself and ``wait`` returns ``[]`` at once.
    """

    def __init__(
        self,
        turn_id: str | None,
        engine: Engine | None = None,
        *,
        skipped_reason: str | None = None,
        channel: str = "",
        notifier: TurnNotifier | None = None,
    ) -> None:
        self.turn_id = turn_id
        self.channel = channel
        self._engine = engine
        self._skipped_reason = skipped_reason
        #: Redis pub/sub wake-ups for ``wait`` (None: poll the database).
        self._notifier = notifier

    @classmethod
    def skipped(cls, reason: str, *, channel: str = "") -> TurnHandle:
        """A handle for a message that does not become a turn."""
        return cls(None, None, skipped_reason=reason, channel=channel)

    @property
    def is_skipped(self) -> bool:
        """True when the message did not become a turn."""
        return self._skipped_reason is not None

    def run(self) -> TurnRun | None:
        """A fresh copy of the TurnRun row (None for skipped turns)."""
        if self.turn_id is None or self._engine is None:
            return None
        return store.get_run(self._engine, self.turn_id)

    def status(self) -> str:
        """queued, running, done, failed or skipped."""
        if self.is_skipped:
            return TurnStatus.skipped.value
        run = self.run()
        if run is None:
            raise LookupError(f"turn {self.turn_id} does not exist")
        return run.status

    @property
    def publish_pending(self) -> bool:
        """True while the turn's chain has not reached the broker: it waits behind an earlier
        turn of its scope, or the broker was unreachable (the sweeper publishes it)."""
        if self.is_skipped:
            return False
        run = self.run()
        return run is not None and run.status == TurnStatus.queued and run.publishes == 0

    @property
    def reason(self) -> str | None:
        """Why the turn was skipped or failed (None otherwise)."""
        if self.is_skipped:
            return self._skipped_reason
        run = self.run()
        return run.reason if run is not None else None

    def wait(self, timeout: float = 30.0, *, poll_interval: float = 0.05) -> list[dict[str, Any]]:
        """Block until the turn finishes; return its rendered messages.

        A failed turn returns its failure reply; raises ``TimeoutError`` after ``timeout`` s.
        """
        if self.is_skipped:
            return []
        if self._notifier is not None and self.turn_id is not None:
            self._notifier.wait(self.turn_id, self._finished, timeout)
            return self._rendered_or_timeout(timeout)
        deadline = time.monotonic() + timeout
        delay = poll_interval
        while True:
            run = self.run()
            if run is not None and run.status in FINISHED:
                return list(run.rendered or [])
            if time.monotonic() >= deadline:
                status = run.status if run is not None else "missing"
                raise TimeoutError(f"turn {self.turn_id} still {status} after {timeout} s")
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 1.5, 0.5)

    def _finished(self) -> bool:
        run = self.run()
        return run is not None and run.status in FINISHED

    def _rendered_or_timeout(self, timeout: float) -> list[dict[str, Any]]:
        run = self.run()
        if run is not None and run.status in FINISHED:
            return list(run.rendered or [])
        status = run.status if run is not None else "missing"
        raise TimeoutError(f"turn {self.turn_id} still {status} after {timeout} s")

    async def wait_async(self, timeout: float = 30.0) -> list[dict[str, Any]]:
        """``await``-able :meth:`wait`: woken by the Redis notification when there is one (the
        database reads run in a thread), else polling without blocking the event loop."""
        import asyncio

        if self.is_skipped or self.turn_id is None:
            return []

        async def finished() -> bool:
            return await asyncio.to_thread(self._finished)

        if self._notifier is not None:
            await self._notifier.wait_async(self.turn_id, finished, timeout)
        else:
            deadline = time.monotonic() + timeout
            delay = 0.05
            while not await finished() and time.monotonic() < deadline:
                await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
                delay = min(delay * 1.5, 0.5)
        return await asyncio.to_thread(self._rendered_or_timeout, timeout)

    def tokens(self, timeout: float = 60.0) -> Iterator[StreamEvent]:
        """The reply as the model writes it: ``token`` and ``reset`` events, then one
        ``finished`` event with the turn's status (see :mod:`nekoflow.turns.stream`). Without
        Redis pub/sub (embedded mode) only the ``finished`` event, once the turn ends."""
        from nekoflow.turns.stream import StreamEvent, follow

        if self.is_skipped or self.turn_id is None:
            yield StreamEvent("finished", status=TurnStatus.skipped.value)
            return
        if self._notifier is None:
            self.wait(timeout)
            yield StreamEvent("finished", status=self.status())
            return
        yield from follow(
            self._notifier.url, self._notifier.prefix, self.turn_id, self._final_status, timeout
        )

    def _final_status(self) -> str | None:
        run = self.run()
        return run.status if run is not None and run.status in FINISHED else None

    def __repr__(self) -> str:
        if self.is_skipped:
            return f"<TurnHandle skipped: {self._skipped_reason}>"
        return f"<TurnHandle {self.turn_id}>"
