"""The seam the pipeline reports what happened to (a turn ended, a model call, usage): pure.

Call sites pass ids-free, bounded facts (channel, status, model, counts); observers (the
Prometheus metrics, tracing) register with :func:`register`. Reporting never raises and costs
one empty loop when nothing is registered, so the pipeline does not depend on any observer.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from nekoflow.debuglog import debug_detail

log = logging.getLogger(__name__)


class Observer(Protocol):
    """What an observer of the pipeline may implement (each method optional)."""

    def turn_ended(
        self,
        channel: str,
        status: str,
        reason: str | None,
        turn_id: str | None,
        started_at: datetime | None,
    ) -> None:
        """A turn reached its final status (done, failed, skipped, superseded); ``turn_id`` and
        ``started_at`` are None for messages skipped before they became a turn."""

    def llm_call(self, model: str, seconds: float, outcome: str) -> None:
        """One chat-model call of the reply stage ended (``ok`` or the error class)."""

    def usage(self, kind: str, entries: Sequence[tuple[str, int, int]]) -> None:
        """Usage kept for a turn: ``kind`` (reply/review), ``(model, prompt, completion)``s."""

    def proactive(self, kind: str, outcome: str) -> None:
        """The proactive sweep handled a schedule: ``kind`` (follow_up/reminder), ``outcome``
        (fired, later, dropped)."""


_observers: list[object] = []
_lock = threading.Lock()


def register(observer: object) -> None:
    """Add ``observer`` (once) to those told about the pipeline."""
    with _lock:
        if observer not in _observers:
            _observers.append(observer)


def unregister(observer: object) -> None:
    """Stop telling ``observer``."""
    with _lock:
        if observer in _observers:
            _observers.remove(observer)


def _tell(method: str, *args: object) -> None:
    for observer in list(_observers):
        fn = getattr(observer, method, None)
        if fn is None:
            continue
        try:
            fn(*args)
        except Exception as exc:  # an observer never breaks a turn
            # The class only: an observer's error may quote what it was given; the detail goes
            # to the opt-in debug log.
            name = f"{type(observer).__name__}.{method}"
            log.warning("observer %s failed (%s)", name, type(exc).__name__)
            debug_detail(f"observer {name} failed", exc)


def turn_ended(
    channel: str,
    status: str,
    reason: str | None = None,
    *,
    turn_id: str | None = None,
    started_at: datetime | None = None,
) -> None:
    """Report a turn's final status (the reason is only labelled for skips, as a short code)."""
    _tell("turn_ended", channel, status, reason, turn_id, started_at)


def llm_call(model: str, seconds: float, outcome: str) -> None:
    """Report one chat-model call's wall time and outcome."""
    _tell("llm_call", model, seconds, outcome)


def usage(kind: str, entries: Sequence[tuple[str, int, int]]) -> None:
    """Report usage that was kept for a turn (counted exactly once per turn and kind)."""
    _tell("usage", kind, entries)


def proactive(kind: str, outcome: str) -> None:
    """Report what the proactive sweep did with one schedule (fired, later, dropped)."""
    _tell("proactive", kind, outcome)
