"""Promised reminders in a user's message (pure, Chinese and English): "明天早上7点叫我起床",
"今晚提醒我吃药", "remind me to call mom tomorrow at 9", and "别叫我了" / "cancel the reminder".

:func:`find_reminder` returns what to remind and when, resolved against the message's time in
the scope's time zone; :func:`cancels_reminders` says whether the user called reminders off.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

_CN_NUM = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7}
_CN_NUM |= {"八": 8, "九": 9, "十": 10, "十一": 11, "十二": 12}
_WEEK_CN = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_WEEK_EN = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
#: Part of the day → (default hour, minute, adds 12 to an hour below 12).
_PARTS_CN = {
    "早上": (8, 0, False),
    "早晨": (8, 0, False),
    "清早": (7, 0, False),
    "上午": (9, 0, False),
    "中午": (12, 0, False),
    "下午": (15, 0, True),
    "傍晚": (18, 0, True),
    "晚上": (20, 0, True),
    "今晚": (20, 0, True),
    "明早": (8, 0, False),
    "明晚": (20, 0, True),
    "夜里": (22, 0, True),
}
_PARTS_EN = {"morning": (8, 0, False), "afternoon": (15, 0, True), "evening": (19, 0, True)}
_PARTS_EN |= {"night": (21, 0, True), "tonight": (20, 0, True), "noon": (12, 0, False)}

_NUM = r"(?:\d{1,2}|十[一二]?|[一二两三四五六七八九十])"
_WHEN_CN = (
    rf"(?:(?:今天|明天|后天|大后天|(?:下)?(?:周|星期|礼拜)[一二三四五六日天])?"
    rf"(?:早上|早晨|清早|上午|中午|下午|傍晚|晚上|今晚|明早|明晚|夜里)?"
    rf"(?:{_NUM}点(?:半|\d{{1,2}}分?)?)?"
    rf"|\d{{1,3}}\s*(?:分钟|个?小时)(?:以?后|之后))"
)
_ASK_CN = re.compile(
    rf"(?P<t>{_WHEN_CN})\s*(?:记得|要)?(?:叫|喊|提醒)我\s*(?P<e>[\u4e00-\u9fffA-Za-z0-9]{{1,12}})?"
)
_ASK_CN2 = re.compile(
    rf"(?:叫|喊|提醒)我\s*(?P<t>{_WHEN_CN})\s*(?P<e>[\u4e00-\u9fffA-Za-z0-9]{{1,12}})"
)
_WHEN_EN = (
    r"(?:tomorrow(?: (?:morning|afternoon|evening|night))?|tonight|this (?:morning|afternoon|"
    r"evening)|(?:on )?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|in \d{1,3} (?:minutes?|hours?))(?: at \d{1,2}(?::\d{2})? ?(?:am|pm)?)?"
    r"|at \d{1,2}(?::\d{2})? ?(?:am|pm)?"
)
_ASK_EN = [
    re.compile(rf"\bremind me (?P<t>{_WHEN_EN}) to (?P<e>[a-z][a-z' ]{{1,40}}?)\s*(?:[.!?]|$)"),
    re.compile(rf"\bremind me to (?P<e>[a-z][a-z' ]{{1,40}}?) (?P<t>{_WHEN_EN})\b"),
    re.compile(rf"\bwake me up (?P<t>{_WHEN_EN})\b"),
]
_CANCEL = re.compile(
    r"(?:别|不用|不要|不必|取消)(?:再)?(?:叫|喊|提醒)(?:我)?(?:了|啦)?"
    r"|取消(?:那个)?(?:提醒|闹钟)"
    r"|\b(?:cancel|forget|never mind)(?: about)? (?:the|my|that) (?:reminder|wake-?up call)"
    r"|\bdon'?t (?:remind|wake) me\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Reminder:
    """A reminder the user asked for: when (aware) and what (as the user said it)."""

    at: datetime
    what: str
    said: str


def _cn_number(text: str) -> int | None:
    return int(text) if text.isdigit() else _CN_NUM.get(text)


def _resolve_cn(phrase: str, base: datetime) -> datetime | None:
    """``phrase`` (a Chinese time phrase) as a local time after ``base`` (local, aware)."""
    rel = re.fullmatch(r"(\d{1,3})\s*(分钟|个?小时)(?:以?后|之后)", phrase)
    if rel:
        unit = 60 if rel.group(2) == "分钟" else 3600
        return base + timedelta(seconds=int(rel.group(1)) * unit)
    day = base
    offset = {"今天": 0, "明天": 1, "后天": 2, "大后天": 3, "明早": 1, "明晚": 1}
    for word, days in offset.items():
        if phrase.startswith(word):
            day = base + timedelta(days=days)
            break
    week = re.search(r"(下)?(?:周|星期|礼拜)([一二三四五六日天])", phrase)
    if week:
        target = _WEEK_CN[week.group(2)]
        this_week = (target - base.weekday()) % 7 or 7
        ahead = 7 - base.weekday() + target if week.group(1) else this_week  # 下周: next week's
        day = base + timedelta(days=ahead)
    hour, minute, pm = 9, 0, False
    known = False
    for word, (h, m, p) in _PARTS_CN.items():
        if word in phrase:
            hour, minute, pm, known = h, m, p, True
            break
    clock = re.search(rf"({_NUM})点(半|(\d{{1,2}})分?)?", phrase)
    if clock:
        n = _cn_number(clock.group(1))
        if n is None:
            return None
        hour, minute = n + (12 if pm and n < 12 else 0), 0
        if clock.group(2) == "半":
            minute = 30
        elif clock.group(3):
            minute = int(clock.group(3))
        known = True
    if not known and day == base:
        return None  # "提醒我" with no time at all
    if hour > 23 or minute > 59:
        return None
    at = day.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if at <= base and not (week or day != base):
        at += timedelta(days=1)  # "8点叫我" said at 9: tomorrow's 8
    return at if at > base else None


def _resolve_en(phrase: str, base: datetime) -> datetime | None:
    """``phrase`` (an English time phrase) as a local time after ``base``."""
    phrase = phrase.lower().strip()
    rel = re.fullmatch(r"in (\d{1,3}) (minutes?|hours?)", phrase)
    if rel:
        unit = 60 if rel.group(2).startswith("minute") else 3600
        return base + timedelta(seconds=int(rel.group(1)) * unit)
    day, hour, minute, pm, known = base, 9, 0, False, False
    if phrase.startswith("tomorrow"):
        day = base + timedelta(days=1)
    for name in _WEEK_EN:
        if name in phrase:
            day = base + timedelta(days=(_WEEK_EN.index(name) - base.weekday()) % 7 or 7)
    for word, (h, m, p) in _PARTS_EN.items():
        if word in phrase:
            hour, minute, pm, known = h, m, p, True
    clock = re.search(r"at (\d{1,2})(?::(\d{2}))? ?(am|pm)?", phrase)
    if clock:
        hour, minute = int(clock.group(1)), int(clock.group(2) or 0)
        if clock.group(3) == "pm" or (pm and not clock.group(3)):
            hour += 12 if hour < 12 else 0
        elif clock.group(3) == "am" and hour == 12:
            hour = 0
        known = True
    if hour > 23 or minute > 59 or (not known and day == base):
        return None
    at = day.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if at <= base and day == base:
        at += timedelta(days=1)
    return at if at > base else None


def find_reminder(text: str, now: datetime, zone: ZoneInfo) -> Reminder | None:
    """The reminder ``text`` asks for, due after ``now`` (aware), or None."""
    base = now.astimezone(zone)
    for pattern in (_ASK_CN, _ASK_CN2):
        for m in pattern.finditer(text):
            phrase = (m.group("t") or "").strip()
            if not phrase:
                continue
            at = _resolve_cn(phrase, base)
            if at is not None:
                what = re.sub(r"[了啦呀哦吧啊呢哈嘛喔噢]+$", "", (m.group("e") or "").strip())
                what = what or "提醒"
                return Reminder(at=at.astimezone(now.tzinfo), what=what, said=m.group(0).strip())
    lowered = text.lower()
    for pattern in _ASK_EN:
        m = pattern.search(lowered)
        if m is None:
            continue
        at = _resolve_en(m.group("t"), base)
        if at is not None:
            what = (m.groupdict().get("e") or "wake up").strip()
            return Reminder(at=at.astimezone(now.tzinfo), what=what, said=m.group(0).strip())
    return None


def cancels_reminders(text: str) -> bool:
    """True when the user calls the reminders off ("别叫我了", "cancel the reminder")."""
    return bool(_CANCEL.search(text))
