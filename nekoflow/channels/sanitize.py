"""Text from a platform made safe to store and send on: what every adapter's output goes through.

A NUL character is refused by PostgreSQL (text and JSONB), and a lone UTF-16 surrogate (valid in
JSON's ``\\ud800`` escape, invalid in UTF-8) fails every encode to the database or the model's
API. Both arrive from platforms as typed by users or bots, so they are cleaned once, at the
adapter boundary: C0 control characters other than tab, newline and carriage return are dropped,
lone surrogates become U+FFFD (the replacement character).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_SURROGATES = re.compile(r"[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` without C0 controls (except ``\\t\\n\\r``) and with lone surrogates as U+FFFD."""
    if text.isascii():
        return _CONTROLS.sub("", text)
    return _SURROGATES.sub("\ufffd", _CONTROLS.sub("", text))


def clean(value: Any) -> Any:
    """``value`` with every string in it cleaned (mapping keys, lists and tuples included)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, Mapping):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(clean(v) for v in value)
    return value
