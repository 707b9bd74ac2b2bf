"""message_time: platform timestamps in their several shapes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from nekoflow.turns.clock import message_time

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def test_unix_seconds_milliseconds_and_iso() -> None:
    ts = int((NOW - timedelta(hours=1)).timestamp())
    assert message_time({"time": ts}, NOW) == NOW - timedelta(hours=1)
    assert message_time({"create_time": str(ts * 1000)}, NOW) == NOW - timedelta(hours=1)
    assert message_time({"timestamp": "2026-02-28T23:00:00+00:00"}, NOW) == NOW - timedelta(hours=1)
    assert message_time({"date": "2026-02-28T23:00:00Z"}, NOW) == NOW - timedelta(hours=1)


def test_missing_bad_or_future_times_fall_back() -> None:
    assert message_time({}, NOW) == NOW
    assert message_time({"time": "soon"}, NOW) == NOW
    assert message_time({"time": True}, NOW) == NOW
    assert message_time({"time": 10**30}, NOW) == NOW
    future = int((NOW + timedelta(hours=2)).timestamp())
    assert message_time({"time": future}, NOW) == NOW
