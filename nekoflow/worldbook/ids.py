"""Id and timestamp helpers shared by the store and the importers."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime


def now_iso() -> str:
    """The current UTC time as ISO-8601 with microseconds (the store's timestamp format)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def new_id() -> str:
    """A fresh random id for a book or an entry."""
    return uuid.uuid4().hex
