"""Time expressions in a message ("last Tuesday", "上周", "昨天", "三天前", "in March") as a date
range, so retrieval can narrow past rounds and memories by date. Pure: no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo

__all__ = ["TimeRange", "parse_time"]


@dataclass(frozen=True, slots=True)
class TimeRange:
    """A half-open range ``[start, end)`` a message refers to, and the text that said it."""

    start: datetime
    end: datetime
    span: tuple[int, int]
    #: The words that named it ("昨天", "last tuesday").
    words: str = ""

    def contains(self, at: datetime) -> bool:
        """Whether ``at`` is in the range."""
        return self.start <= at < self.end


_CN_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5}
_CN_DIGITS |= {"六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_EN_NUM = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_EN_NUM |= {"eight": 8, "nine": 9, "ten": 10, "a": 1, "an": 1, "a couple of": 2, "couple of": 2}
_WEEKDAYS_EN = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAYS_CN = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_MONTHS_EN = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_CN_NUM = "[0-9零一二两三四五六七八九十]{1,3}"


def _cn_int(text: str) -> int | None:
    """``3``, ``三``, ``十二``, ``二十`` as an integer (None when unreadable)."""
    if text.isdigit():
        return int(text)
    if not text or any(c not in _CN_DIGITS for c in text):
        return None
    if "十" in text:
        head, _, tail = text.partition("十")
        tens = _CN_DIGITS[head] if head else 1
        return tens * 10 + (_CN_DIGITS[tail] if tail else 0)
    return _CN_DIGITS[text] if len(text) == 1 else None


def _day(d: date, tz: tzinfo, days: int = 1) -> tuple[datetime, datetime]:
    start = datetime.combine(d, time(), tz)
    return start, start + timedelta(days=days)


def _week_start(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _month(year: int, month: int, tz: tzinfo) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=tz)
    nxt = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=tz)
    return start, nxt


def _past_month(today: date, month: int, tz: tzinfo) -> tuple[datetime, datetime]:
    """The most recent ``month`` not after today (this year's, else last year's)."""
    year = today.year if month <= today.month else today.year - 1
    return _month(year, month, tz)


_EN_NUMS = "|".join(sorted(map(re.escape, _EN_NUM), key=len, reverse=True))
_WEEK_CN = "(?:周|星期|礼拜)"
_MONTH_CN = (
    "(?<![0-9零一二两三四五六七八九十上下这本])"
    "(1[0-2]|[1-9]|十[一二]?|[一二三四五六七八九])月(?!\\d*[日号])"
)
_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bday before yesterday\b|前天"), "before_yesterday"),
    (re.compile(r"\byesterday\b|昨天|昨日|昨晚|昨儿"), "yesterday"),
    (re.compile(r"\btoday\b|\btonight\b|今天|今晚|今日"), "today"),
    (re.compile(rf"\b(\d+|{_EN_NUMS}) days? ago\b|({_CN_NUM})天(?:以)?前"), "days_ago"),
    (
        re.compile(rf"\b(\d+|{_EN_NUMS}) weeks? ago\b|({_CN_NUM})(?:个)?{_WEEK_CN}(?:以)?前"),
        "weeks_ago",
    ),
    (re.compile(rf"\b(\d+|{_EN_NUMS}) months? ago\b|({_CN_NUM})个月(?:以)?前"), "months_ago"),
    (
        re.compile(
            r"\blast (" + "|".join(_WEEKDAYS_EN) + rf")\b|上(?:个)?{_WEEK_CN}([一二三四五六日天])"
        ),
        "last_weekday",
    ),
    (re.compile(r"\blast weekend\b|上(?:个)?周末"), "last_weekend"),
    (re.compile(rf"\blast week\b|上(?:个)?{_WEEK_CN}"), "last_week"),
    (re.compile(rf"\bthis week\b|这(?:个)?{_WEEK_CN}|本周"), "this_week"),
    (re.compile(r"\blast month\b|上(?:个)?月"), "last_month"),
    (re.compile(r"\bthis month\b|这个月|本月"), "this_month"),
    (
        re.compile(
            r"\b(?:in|during|back in|early|late) (" + "|".join(_MONTHS_EN) + r")\b|" + _MONTH_CN
        ),
        "month",
    ),
]


def _count(m: re.Match[str]) -> int | None:
    raw = next((g for g in m.groups() if g), "")
    return _EN_NUM.get(raw) or _cn_int(raw)


def parse_time(message: str, now: datetime, tz: tzinfo | None = None) -> TimeRange | None:
    """The first time expression of ``message`` as a date range relative to ``now`` (None when
    the message names no time). Day boundaries are in ``tz`` (default: ``now``'s zone)."""
    if not message:
        return None
    zone = tz or now.tzinfo
    assert zone is not None, "now must be timezone-aware"
    local = now.astimezone(zone)
    today = local.date()
    text = message.lower()
    for pattern, kind in _RULES:
        m = pattern.search(text)
        if m is None:
            continue
        rng = _range(kind, m, today, zone)
        if rng is not None:
            return TimeRange(start=rng[0], end=rng[1], span=m.span(), words=m.group())
    return None


def _range(
    kind: str, m: re.Match[str], today: date, tz: tzinfo
) -> tuple[datetime, datetime] | None:
    """The date range of one matched expression."""
    if kind == "before_yesterday":
        return _day(today - timedelta(days=2), tz)
    if kind == "yesterday":
        return _day(today - timedelta(days=1), tz)
    if kind == "today":
        return _day(today, tz)
    if kind in ("days_ago", "weeks_ago", "months_ago"):
        n = _count(m)
        if n is None or n <= 0 or n > 400:
            return None
        days = n * {"days_ago": 1, "weeks_ago": 7, "months_ago": 30}[kind]
        slack = {"days_ago": 1, "weeks_ago": 3, "months_ago": 10}[kind]  # "three days ago" is loose
        return _day(today - timedelta(days=days + slack), tz, 2 * slack + 1)
    if kind == "last_weekday":
        raw = next(g for g in m.groups() if g)
        wd = _WEEKDAYS_EN.index(raw) if raw in _WEEKDAYS_EN else _WEEKDAYS_CN[raw]
        monday = _week_start(today) - timedelta(days=7)
        return _day(monday + timedelta(days=wd), tz)
    if kind == "last_weekend":
        return _day(_week_start(today) - timedelta(days=2), tz, 2)
    if kind == "last_week":
        return _day(_week_start(today) - timedelta(days=7), tz, 7)
    if kind == "this_week":
        return _day(_week_start(today), tz, 7)
    if kind == "last_month":
        first = today.replace(day=1) - timedelta(days=1)
        return _month(first.year, first.month, tz)
    if kind == "this_month":
        return _month(today.year, today.month, tz)
    if kind == "month":
        raw = next(g for g in m.groups() if g)
        month = _MONTHS_EN.index(raw) + 1 if raw in _MONTHS_EN else _cn_int(raw)
        if month is None or not 1 <= month <= 12:
            return None
        return _past_month(today, month, tz)
    return None
