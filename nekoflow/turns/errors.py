"""Errors that end a turn."""

from __future__ import annotations

from nekoflow.errors import NekoflowError


class TurnFailed(NekoflowError):
    """The turn cannot complete; ``reason`` is stored on the TurnRun and shown to operators."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TurnNotRunnable(NekoflowError):
    """The stage should not run now (turn finished, skipped or not yet claimed): stop the chain."""


class StageBusy(NekoflowError):
    """Another chain of the same turn is doing this stage's work now: try again later."""

    def __init__(self, reason: str, *, wait_seconds: float) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait_seconds = wait_seconds


class LLMAttemptFailed(NekoflowError):
    """The turn's LLM call failed; ``attempt`` is the turn's own count of calls made so far."""

    def __init__(self, error: Exception, attempt: int) -> None:
        super().__init__(f"LLM attempt {attempt} failed: {type(error).__name__}")
        self.error = error
        self.attempt = attempt


class TurnSkipped(NekoflowError):
    """The turn will not be answered (e.g. its message is ``stale``); ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
