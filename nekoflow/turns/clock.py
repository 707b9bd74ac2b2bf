"""When a message was sent, from the platform's own timestamp when it carries one.

Adapters keep the platform time in ``ChatRequest.metadata`` (OneBot ``time``, QQ bot
``timestamp``, Telegram ``date``, Feishu ``create_time``; the Web protocol may send ``time``).
The real-time gap between turns is measured between these times, so a queue backlog does not
look like the user being away.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from nekoflow.channels.context import TIME_KEYS

MAX_FUTURE = timedelta(minutes=5)


def _parse(value: Any) -> datetime | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            value = int(text)
        else:
            try:
                parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                return None
            return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e12 else value  # milliseconds (Feishu) or seconds
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def message_time(metadata: Mapping[str, Any], received_at: datetime) -> datetime:
    """The platform's send time when present and sane, else ``received_at``.

    A time more than five minutes after ``received_at`` (a skewed clock) is not trusted.
    """
    for key in TIME_KEYS:
        if key in metadata:
            sent = _parse(metadata[key])
            if sent is not None and sent <= received_at + MAX_FUTURE:
                return sent
    return received_at
