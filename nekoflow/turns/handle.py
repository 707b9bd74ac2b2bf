"""TurnHandle: what ``enqueue_turn`` returns — the turn id, its status, and a way to wait."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy.engine import Engine

from nekoflow.storage.turns import FINISHED, TurnRun, TurnStatus
from nekoflow.turns import store


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
    ) -> None:
        self.turn_id = turn_id
        self.channel = channel
        self._engine = engine
        self._skipped_reason = skipped_reason

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

    def __repr__(self) -> str:
        if self.is_skipped:
            return f"<TurnHandle skipped: {self._skipped_reason}>"
        return f"<TurnHandle {self.turn_id}>"
