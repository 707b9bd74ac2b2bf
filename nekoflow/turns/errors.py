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
