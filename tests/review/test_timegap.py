"""real_time_context: thresholds, labels, input forms."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from nekoflow.errors import InputError
from nekoflow.review import real_time_context

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("seconds", "level"),
    [
        (0, "continuous"),
        (1799, "continuous"),
        (1800, "short_gap"),
        (21599, "short_gap"),
        (21600, "same_day_gap"),
        (86399, "same_day_gap"),
        (86400, "days"),
        (604799, "days"),
        (604800, "long_absence"),
        (10**8, "long_absence"),
    ],
)
def test_thresholds(seconds: int, level: str) -> None:
    ctx = real_time_context(ago(seconds), NOW)
    assert ctx.continuity_level == level
    assert ctx.elapsed_seconds == seconds


@pytest.mark.parametrize(
    ("seconds", "label"),
    [
        (0, "刚刚"),
        (59, "刚刚"),
        (60, "1分钟"),
        (3599, "59分钟"),
        (3600, "1小时"),
        (86399, "23小时"),
        (86400, "1天"),
        (86400 + 3600 * 5, "1天5小时"),
        (86400 * 3 + 3599, "3天"),
        (86400 * 10 + 7200, "10天2小时"),
    ],
)
def test_labels(seconds: int, label: str) -> None:
    assert real_time_context(ago(seconds), NOW).elapsed_label == label


def test_first_contact() -> None:
    ctx = real_time_context(None, NOW)
    assert ctx.continuity_level == "first_contact"
    assert ctx.elapsed_label == "初次记录"
    assert ctx.elapsed_seconds is None


@pytest.mark.parametrize("bad", ["", "yesterday", "2026-13-45T00:00:00", "12:00"])
def test_unparseable_previous_is_first_contact(bad: str) -> None:
    assert real_time_context(bad, NOW).continuity_level == "first_contact"


def test_iso_strings_with_z_and_offsets() -> None:
    assert real_time_context("2026-03-01T11:00:00Z", NOW).elapsed_label == "1小时"
    assert real_time_context("2026-03-01T19:00:00+08:00", NOW).elapsed_label == "1小时"
    assert real_time_context("2026-03-01T11:55:00", NOW).elapsed_label == "5分钟"  # naive = UTC


def test_future_previous_counts_as_zero() -> None:
    ctx = real_time_context(NOW + timedelta(hours=3), NOW)
    assert ctx.elapsed_seconds == 0
    assert ctx.continuity_level == "continuous"
    assert ctx.elapsed_label == "刚刚"


def test_mixed_naive_and_aware() -> None:
    tz8 = timezone(timedelta(hours=8))
    prev = datetime(2026, 3, 1, 18, 0, tzinfo=tz8)  # 10:00 UTC
    assert real_time_context(prev, NOW.replace(tzinfo=None)).elapsed_label == "2小时"


def test_now_defaults_to_current_time() -> None:
    ctx = real_time_context(datetime.now(UTC) - timedelta(minutes=10))
    assert ctx.continuity_level == "continuous"


def test_bad_now_names_field() -> None:
    with pytest.raises(InputError, match="now"):
        real_time_context(NOW, "not a time")


def test_to_dict_feeds_review_input() -> None:
    d = real_time_context(ago(3 * 86400), NOW).to_dict()
    assert d == {"continuity_level": "days", "elapsed_seconds": 259200.0, "elapsed_label": "3天"}


def test_epoch_seconds_and_dates_are_moments() -> None:
    epoch = NOW.timestamp()
    assert real_time_context(epoch - 7200, NOW).elapsed_label == "2小时"
    assert real_time_context(int(epoch) - 90000, int(epoch)).elapsed_label == "1天1小时"
    assert real_time_context(NOW.date(), NOW).elapsed_seconds == (NOW.hour * 3600)
    assert real_time_context(b"2026-03-01T11:00:00Z", NOW).elapsed_label == "1小时"


@pytest.mark.parametrize("bad", [True, float("nan"), float("inf"), 1e30, object()])
def test_unusable_previous_values_are_first_contact(bad: object) -> None:
    assert real_time_context(bad, NOW).continuity_level == "first_contact"  # type: ignore[arg-type]
