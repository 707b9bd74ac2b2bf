"""Typed, path-aware reads from a raw platform event (a JSON object).

Every read names the field's dotted path in the :class:`MalformedEventError` it raises, so a
malformed event never surfaces as a KeyError/TypeError from inside an adapter.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from nekoflow.channels.errors import MalformedEventError

_MISSING = object()


def load_event(channel: str, raw_event: Any) -> Mapping[str, Any]:
    """The event as a mapping: dicts pass through; JSON text (str/bytes) is decoded."""
    if isinstance(raw_event, bytes | bytearray):
        try:
            raw_event = raw_event.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedEventError(channel, "event", "is not UTF-8 text") from exc
    if isinstance(raw_event, str):
        try:
            raw_event = json.loads(raw_event)
        except (ValueError, RecursionError) as exc:
            raise MalformedEventError(channel, "event", f"is not valid JSON ({exc})") from exc
    if not isinstance(raw_event, Mapping):
        raise MalformedEventError(
            channel, "event", f"must be a JSON object, got {type(raw_event).__name__}"
        )
    return raw_event


def object_list(channel: str, value: Any, where: str) -> list[Fields]:
    """``value`` as a list of JSON objects at path ``where``, or an error naming the bad item."""
    if not isinstance(value, list):
        raise MalformedEventError(channel, where, f"must be a list, got {type(value).__name__}")
    out: list[Fields] = []
    for index, item in enumerate(value):
        item_where = f"{where}[{index}]"
        if not isinstance(item, Mapping):
            raise MalformedEventError(
                channel, item_where, f"must be an object, got {type(item).__name__}"
            )
        out.append(Fields(channel, item, item_where))
    return out


class Fields:
    """A read-only view of one JSON object inside an event, remembering its path."""

    def __init__(self, channel: str, data: Mapping[str, Any], path: str = "") -> None:
        self.channel = channel
        self.data = data
        self.path = path

    def where(self, key: str) -> str:
        """The dotted path of ``key`` inside this object."""
        return f"{self.path}.{key}" if self.path else key

    def error(self, key: str, problem: str) -> MalformedEventError:
        """An error about ``key`` of this object."""
        return MalformedEventError(self.channel, self.where(key), problem)

    def has(self, key: str) -> bool:
        """True when ``key`` is present and not null."""
        return self.data.get(key) is not None

    def raw(self, key: str) -> Any:
        """The value as is (None when absent)."""
        return self.data.get(key)

    def _value(self, key: str, required: bool) -> Any:
        value = self.data.get(key, _MISSING)
        if value is _MISSING or value is None:
            if required:
                raise self.error(key, "is missing")
            return _MISSING
        return value

    def obj(self, key: str, *, required: bool = False) -> Fields | None:
        """A nested JSON object."""
        value = self._value(key, required)
        if value is _MISSING:
            return None
        if not isinstance(value, Mapping):
            raise self.error(key, f"must be an object, got {type(value).__name__}")
        return Fields(self.channel, value, self.where(key))

    def need(self, key: str) -> Fields:
        """A nested JSON object that must be present."""
        found = self.obj(key, required=True)
        if found is None:  # pragma: no cover - obj(required=True) raised already
            raise self.error(key, "is missing")
        return found

    def objs(self, key: str, *, required: bool = False) -> list[Fields]:
        """A list of JSON objects ([] when absent)."""
        value = self._value(key, required)
        if value is _MISSING:
            return []
        return object_list(self.channel, value, self.where(key))

    def text(self, key: str, *, required: bool = False, default: str = "") -> str:
        """A string field."""
        value = self._value(key, required)
        if value is _MISSING:
            return default
        if not isinstance(value, str):
            raise self.error(key, f"must be a string, got {type(value).__name__}")
        return value

    def ident(self, key: str, *, required: bool = False) -> str:
        """An id: a non-empty string or an integer, returned as str ("" when absent)."""
        value = self._value(key, required)
        if value is _MISSING:
            return ""
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise self.error(key, f"must be a string or an integer id, got {type(value).__name__}")
        text = str(value)
        if required and not text.strip():
            raise self.error(key, "is empty")
        return text

    def integer(self, key: str, *, required: bool = False) -> int | None:
        """An integer field (bool is not an integer here)."""
        value = self._value(key, required)
        if value is _MISSING:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"must be an integer, got {type(value).__name__}")
        return value

    def size(self, key: str) -> int | None:
        """A byte count given as an int or a digit string (platforms differ); else None."""
        value = self.data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        if isinstance(value, str) and value.isascii() and value.isdigit():
            return int(value)
        return None

    def flag(self, key: str, *, default: bool = False) -> bool:
        """A boolean field."""
        value = self._value(key, False)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            raise self.error(key, f"must be a boolean, got {type(value).__name__}")
        return value
