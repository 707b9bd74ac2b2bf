"""Promised reminders read from a user's message (pure): when, what, and calling them off."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from nekoflow.proactive.reminders import cancels_reminders, find_reminder

SH = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 3, 4, 14, 0, tzinfo=UTC)  # Wednesday 22:00 in Shanghai


def _local(text: str) -> tuple[str, str] | None:
    r = find_reminder(text, NOW, SH)
    return None if r is None else (r.at.astimezone(SH).strftime("%m-%d %H:%M"), r.what)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("明天早上叫我起床", ("03-05 08:00", "起床")),
        ("明天早上7点叫我起床哦", ("03-05 07:00", "起床")),
        ("明晚八点半提醒我看球", ("03-05 20:30", "看球")),
        ("后天下午3点提醒我开会", ("03-06 15:00", "开会")),
        ("周五提醒我交报告", ("03-06 09:00", "交报告")),
        ("下周一提醒我交作业", ("03-09 09:00", "交作业")),
        ("30分钟后提醒我关火", ("03-04 22:30", "关火")),
        ("提醒我明天中午吃药", ("03-05 12:00", "吃药")),
        ("8点叫我", ("03-05 08:00", "提醒")),  # 8 o'clock has passed today: tomorrow's
        ("remind me to call mom tomorrow at 9", ("03-05 09:00", "call mom")),
        ("Remind me on friday to water the plants.", ("03-06 09:00", "water the plants")),
        ("remind me to stretch in 2 hours", ("03-05 00:00", "stretch")),
        ("wake me up tomorrow at 6:30am", ("03-05 06:30", "wake up")),
    ],
)
def test_reminders_resolve_in_the_scope_time_zone(text: str, expected: tuple[str, str]) -> None:
    assert _local(text) == expected


@pytest.mark.parametrize(
    "text", ["提醒我一下", "你叫什么名字", "我明天要上班", "remind me later", "叫我小明就好"]
)
def test_no_reminder_without_a_time(text: str) -> None:
    assert find_reminder(text, NOW, SH) is None


def test_calling_reminders_off() -> None:
    for text in ("别叫我了", "不用提醒我了", "取消提醒吧", "cancel the reminder", "don't wake me"):
        assert cancels_reminders(text), text
    for text in ("明天早上叫我起床", "remind me to call mom tomorrow at 9", "你好"):
        assert not cancels_reminders(text), text
