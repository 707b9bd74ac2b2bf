"""Checks the platforms' settings share: bot names, URLs, paths, unique keys, lookup by key."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar, overload

__all__ = ["check_name", "check_path", "check_unique", "check_url", "pick"]

T = TypeVar("T")

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def check_name(value: str) -> str:
    """A bot or app name: 1-64 letters, digits, '_', '-' or '.' (it appears in URLs and ids)."""
    if not _NAME.match(value):
        raise ValueError("must be 1-64 letters, digits, '_', '-' or '.'")
    return value


@overload
def check_url(value: str) -> str: ...
@overload
def check_url(value: None) -> None: ...
@overload
def check_url(value: str | None) -> str | None: ...
def check_url(value: str | None) -> str | None:
    """An http(s) URL without its trailing '/'; None stays None."""
    if value is None:
        return None
    if not re.match(r"^https?://[^\s/]+", value):
        raise ValueError("must be an http(s):// URL")
    return value.rstrip("/")


def check_path(value: str) -> str:
    """A URL path starting with '/', without its trailing '/'."""
    if not value.startswith("/") or " " in value:
        raise ValueError("must be a path starting with '/'")
    return value.rstrip("/") or "/"


def check_unique(field: str, what: str, keys: Sequence[str]) -> None:
    """Refuse a list setting naming the same bot twice: ``<field>: duplicate <what>(s) [...]``."""
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise ValueError(f"{field}: duplicate {what}(s) {dupes}")


def pick(items: Sequence[T], key: Callable[[T], str], wanted: str | None) -> T | None:
    """The item whose key is ``wanted``; None or "" means the first item."""
    if not wanted:
        return items[0] if items else None
    return next((i for i in items if key(i) == str(wanted)), None)
