"""Real-time gap between two turns: continuity level, elapsed seconds and a Chinese label."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, time

from pydantic import BaseModel, ConfigDict

from nekoflow.errors import InputError
from nekoflow.review.models import ContinuityLevel

CONTINUOUS_S = 1800
SHORT_GAP_S = 21600
SAME_DAY_S = 86400
DAYS_S = 604800


class RealTimeContext(BaseModel):
    """How long since the previous turn. ``elapsed_seconds`` is None on first contact."""

    model_config = ConfigDict(frozen=True)

    continuity_level: ContinuityLevel
    elapsed_seconds: float | None
    elapsed_label: str

    def to_dict(self) -> dict[str, object]:
        """Plain-dict form, as stored in ``ReviewInput.real_time_context``."""
        return self.model_dump(mode="json")


def _as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _parse(previous: datetime | date | str | float | None) -> datetime | None:
    """A moment in UTC, or None when ``previous`` is not one.

    Besides SPEC's datetime / ISO-8601 string (trailing Z ok), a ``date`` counts as its midnight
    UTC and an int/float as POSIX seconds (chat platforms send epoch timestamps); bytes are
    decoded as UTF-8 text.
    """
    if previous is None or isinstance(previous, bool):
        return None
    if isinstance(previous, datetime):
        return _as_utc(previous)
    if isinstance(previous, date):
        return datetime.combine(previous, time(), tzinfo=UTC)
    if isinstance(previous, int | float):
        if not math.isfinite(previous):
            return None
        try:
            return datetime.fromtimestamp(previous, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(previous, bytes):
        try:
            previous = previous.decode()
        except UnicodeDecodeError:
            return None
    if isinstance(previous, str):
        text = previous.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            return _as_utc(datetime.fromisoformat(text))
        except ValueError:
            return None
    return None


def elapsed_label(seconds: float) -> str:
    """刚刚 / N分钟 / N小时 / N天M小时 (N天 when M is 0)."""
    if seconds < 60:
        return "刚刚"
    if seconds < 3600:
        return f"{int(seconds // 60)}分钟"
    if seconds < 86400:
        return f"{int(seconds // 3600)}小时"
    days, rest = divmod(int(seconds), 86400)
    hours = rest // 3600
    return f"{days}天{hours}小时" if hours else f"{days}天"


def continuity_for(seconds: float) -> ContinuityLevel:
    """The continuity level for an elapsed time in seconds."""
    if seconds < CONTINUOUS_S:
        return ContinuityLevel.continuous
    if seconds < SHORT_GAP_S:
        return ContinuityLevel.short_gap
    if seconds < SAME_DAY_S:
        return ContinuityLevel.same_day_gap
    if seconds < DAYS_S:
        return ContinuityLevel.days
    return ContinuityLevel.long_absence


def real_time_context(
    previous: datetime | date | str | float | None,
    now: datetime | date | str | float | None = None,
) -> RealTimeContext:
    """The gap between ``previous`` (datetime, ISO-8601 string, trailing Z ok, or None) and ``now``.

    No or unparseable ``previous`` → first contact; ``previous`` after ``now`` → 0 s elapsed.
    Naive datetimes (and ISO strings without an offset) are taken as UTC — the platform stores
    UTC. Also accepted: a ``date`` (midnight UTC) and int/float POSIX seconds. ``now`` defaults to
    the current time; an unusable ``now`` is an :class:`InputError` naming ``now``.
    """
    prev = _parse(previous)
    if now is None:
        current = datetime.now(UTC)
    else:
        parsed_now = _parse(now)
        if parsed_now is None:
            raise InputError(f"now: not a datetime or ISO-8601 string: {now!r}", field="now")
        current = parsed_now
    if prev is None:
        return RealTimeContext(
            continuity_level=ContinuityLevel.first_contact,
            elapsed_seconds=None,
            elapsed_label="初次记录",
        )
    seconds = max(0.0, (current - prev).total_seconds())
    return RealTimeContext(
        continuity_level=continuity_for(seconds),
        elapsed_seconds=seconds,
        elapsed_label=elapsed_label(seconds),
    )
