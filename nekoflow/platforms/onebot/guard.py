"""The OneBot gateway while events cannot be stored (the database or Redis unreachable): OneBot
never sends an event twice, so an event that could not be stored is held in memory, the bots
are kept away (the gateway closes their sockets and refuses them) and the held events are stored
once both answer again."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from nekoflow.errors import InputError
from nekoflow.platforms.runtime import is_unreachable, reason

log = logging.getLogger("nekoflow.platforms.onebot.gateway")

MAX_HELD = 1000
"""Events kept in memory while they cannot be stored (the sockets are closed meanwhile)."""

Submit = Callable[[dict[str, Any], str], Any]
"""(event, self id) → stores the event as a turn (``enqueue_turn``)."""


class StoreGuard:
    """Knows whether events can be stored now; holds those that could not and stores them
    when the database and Redis answer again (``probe`` raises while they do not)."""

    def __init__(self, probe: Callable[[], None], submit: Submit) -> None:
        self.probe = probe
        self.submit = submit
        #: why events cannot be stored now (naming the setting), else None
        self.down: str | None = None
        self._held: list[tuple[dict[str, Any], str]] = []
        self._recovery: asyncio.Task[None] | None = None

    def hold(self, frame: dict[str, Any], self_id: str) -> None:
        """Keep ``frame`` to store it when the outage is over."""
        if len(self._held) >= MAX_HELD:
            log.error("onebot bot %s: event dropped, %d already held", self_id, MAX_HELD)
            return
        self._held.append((frame, self_id))

    def trip(self, exc: BaseException) -> bool:
        """Record the outage ``exc`` says and start waiting for its end; True when it begins
        now (the caller then closes the bots' sockets)."""
        began = self.down is None
        if began:
            self.down = reason(exc)
            log.error(
                "onebot: %s; closing bot connections and refusing new ones until it is back",
                self.down,
            )
        if self._recovery is None or self._recovery.done():
            self._recovery = asyncio.get_running_loop().create_task(self._recover())
        return began

    async def _store_held(self) -> None:
        """Store the held events in order (raise if storing is still impossible)."""
        while self._held:
            frame, self_id = self._held[0]
            try:
                await asyncio.to_thread(self.submit, frame, self_id)
            except InputError as exc:
                log.warning("onebot bot %s: event ignored, bad field %s", self_id, exc.field)
            except Exception as exc:
                if is_unreachable(exc):
                    raise
                log.error("onebot bot %s: event not stored (%s)", self_id, reason(exc))
            self._held.pop(0)

    async def _recover(self, backoff_max: float = 30.0) -> None:
        """Probe with backoff until both answer, store the held events, accept bots again."""
        delay = 1.0
        while self.down is not None:
            await asyncio.sleep(delay)
            try:
                await asyncio.to_thread(self.probe)
                await self._store_held()
            except Exception as exc:
                delay = min(delay * 2, backoff_max)
                self.down = reason(exc) if is_unreachable(exc) else self.down
                log.error("onebot: %s; events refused, again in %.0fs", self.down, delay)
                continue
            log.warning("onebot: the database and Redis answer again; accepting bots")
            self.down = None
