"""Project errors: every failure a caller can act on has a type here."""

from __future__ import annotations


class NekoflowError(Exception):
    """Base class of every error nekoflow raises on purpose."""


class ConfigError(NekoflowError):
    """A configuration value is invalid; the message names the section/key or field."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class InputError(NekoflowError):
    """Caller-supplied data is malformed; the message names the offending field."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field
