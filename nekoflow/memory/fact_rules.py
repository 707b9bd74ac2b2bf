# ruff: noqa: E501  (a table of regular expressions: one rule per line reads best)
"""The rule tables of :mod:`nekoflow.memory.facts`: patterns per kind, value trimming, labels.

Every pattern runs on NFKC-normalised text (full-width punctuation is ASCII) with question
clauses already blanked. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from nekoflow.memory.fact_vocab import (
    JOB_CN as _JOB_CN,
)
from nekoflow.memory.fact_vocab import (
    JOBS_EN as _JOBS_EN,
)
from nekoflow.memory.fact_vocab import (
    PAST_CN as _PAST_CN,
)
from nekoflow.memory.fact_vocab import (
    RELATION_CN as _RELATION_CN,
)
from nekoflow.memory.fact_vocab import (
    RELATION_EN as _RELATION_EN,
)
from nekoflow.memory.fact_vocab import (
    SHIFTS_CN as _SHIFTS_CN,
)
from nekoflow.memory.fact_vocab import (
    SHIFTS_EN as _SHIFTS_EN,
)
from nekoflow.memory.fact_vocab import (
    SPECIES_CN as _SPECIES_CN,
)
from nekoflow.memory.fact_vocab import (
    SPECIES_EN as _SPECIES_EN,
)
from nekoflow.memory.fact_vocab import (
    THINGS_CN as _THINGS_CN,
)
from nekoflow.memory.fact_vocab import (
    THINGS_EN as _THINGS_EN,
)
from nekoflow.memory.fact_vocab import (
    TIME_CN as _TIME_CN,
)
from nekoflow.memory.fact_vocab import (
    TIME_EN as _TIME_EN,
)

__all__ = [
    "CHANGE",
    "HYPOTHETICAL",
    "QUESTION_CLAUSE",
    "RULES",
    "THIRD_PERSON_START",
    "clean_value",
]

IGNORE = re.IGNORECASE

QUESTION_CLAUSE = re.compile(
    r"(?:什么|啥|哪|谁|几岁|多少|怎么|为什么|是不是|有没有|要不要|会不会|对不对|来着|吗|呢|么)"
    r"[\s!~.。]*$"
    r"|什么|哪里|哪儿|哪座|哪个|哪家|哪天|谁|多大|几号|几月"
    r"|^(?:what|where|who|when|why|how|which|whose|do|does|did|is|are|am|was|were|can|could|"
    r"would|will|should|shall|have|has|remember|you remember|u remember)\b"
    r"|\b(?:remember|recall) (?:what|where|who|when|my)\b",
    IGNORE,
)
"""A clause that asks: ends in a question particle, holds a wh-word, or starts like a question."""

_RELATIVES_CN = "|".join(sorted(map(re.escape, _RELATION_CN), key=len, reverse=True))
_RELATIVES_EN = "|".join(sorted(map(re.escape, _RELATION_EN), key=len, reverse=True))
HYPOTHETICAL = re.compile(
    r"^[\s\x00]*(?:如果|要是|假如|假设|万一|但愿|若是|(?:if|i wish|wish|imagine|suppose|what if)\b)"
    r"|就好了[\s!~.。]*$|多好[\s!~.。啊呀]*$",
    IGNORE,
)
"""A clause that wishes or supposes ("如果我住在北京就好了", "I wish I lived in Paris"): no fact."""

THIRD_PERSON_START = re.compile(
    rf"^[\s\x00]*(?:他|她|它|我的?(?:{_RELATIVES_CN})|"
    rf"(?:he|she|they|my (?:friend|colleague|boss|roommate|{_RELATIVES_EN})s?)\b)",
    IGNORE,
)
CHANGE = re.compile(
    r"搬到|搬去|搬家|换了|改名|改成|改到|改去|现在是|现在叫|现在在|不再|已经不|新的|新工作|辞职|戒了|"
    r"\b(?:moved|move|new|now|anymore|any more|no longer|changed|switched|renamed|quit)\b",
    IGNORE,
)

_CJK = r"\u4e00-\u9fff"
_STUDENT_CN = {"研究生": "研究生", "硕士": "研究生", "博士": "博士生", "大学": "大学生",
               "本科": "大学生", "高中": "高中生", "初中": "初中生"}  # fmt: skip
NAME = rf"(?P<v>(?![了过着不没个一你他她它们醒起出去来帮给做别吃回干的只条头])[{_CJK}·]{{1,5}}|[A-Za-z][A-Za-z'-]{{0,20}}(?-i: [A-Z][a-z'-]+)?)"
CN_RUN = rf"(?P<v>[{_CJK}A-Za-z0-9·]{{1,16}})"
EN_WORDS = r"(?P<v>[A-Za-z0-9][\w.'&-]*(?: (?!(?:now|and|but|with|since|because|so|for|at|in|near|too|lol|haha|btw|though|anymore|any|very|much|a lot|these days|last|this|next)\b)[A-Za-z0-9][\w.'&-]*){0,3})"
EN_OBJ = r"(?P<v>(?!(?:you|it|that|this|them|him|her|me|to|when|how|being)\b)[A-Za-z][\w'-]*(?: (?!(?:so|too|very|much|a lot|anymore|any|at all|lol|haha|but|and|though|now|either|because|since|more|these|when|if)\b)[A-Za-z][\w'-]*){0,2})"

_TRAIL_CN = re.compile(
    r"(?:就好了|就好|就行了|就行|就可以了|就可以|好了|吧|啦|呀|啊|哦|喔|哈+|嘛|呢|了|的|哟|噢|咯|嘞|"
    r"吃|喝|这个|那个|而已|就是|来着|啊啊)+$"
)
_CUT_CN = re.compile(
    r"(?:今年|今天|现在|目前|已经|是|在|住|和|跟|也|还|就|了|啊|呀|吧|哦|啦|呢|嘛|哈|的|一起|"
    r"每天|平时|上班|工作|这边|那边|附近|里|超|特别|非常|真的|很|但|可|所以|因为|不过|而且|我)"
)
_NOT_VALUES = frozenset(
    {"你", "他", "她", "它", "我", "你们", "他们", "人", "东西", "什么", "这个", "那个", "一下",
     "it", "that", "this", "them", "you", "me", "him", "her", "back", "later", "when", "if",
     "please", "maybe", "sometime", "tomorrow", "now", "again", "anytime", "whatever", "crazy",
     "a", "an", "the", "so", "not", "sure", "tired", "fine", "ok", "okay", "here", "home",
     "sorry", "busy", "just", "really", "going", "gonna", "done", "good", "bad",
     "anymore", "more", "much", "anything", "right", "lately",
     "一家", "一个", "一所", "家", "个"}
)  # fmt: skip
_DURATION_CN = re.compile(
    r"(?:快|都|已经)?[一二三四五六七八九十两几半\d]+多?(?:年|个多?月|天|周|个星期).*$"
)
_EN_LEAD = re.compile(r"^(?:the|a|an|my|our)\s+", IGNORE)


def clean_value(slot: str, value: str) -> str:
    """The value alone: particles, trailing clauses and filler words cut, length bounded."""
    v = value.replace("\x00", "").strip(" .,!~'\"“”‘’()[]")
    if not v:
        return ""
    if re.search(rf"[{_CJK}]", v):
        keep_de = slot.startswith(("user.plan.", "user.event."))
        if not slot.startswith(("user.plan", "user.event", "user.birthday")):
            cut = _CUT_CN.search(v, 1)
            if cut:
                v = v[: cut.start()]
        v = _TRAIL_CN.sub("", v) if not keep_de else re.sub(r"(?:了|啦|呀|哦|吧|啊|呢)+$", "", v)
    else:
        if slot not in ("user.workplace", "user.vet"):
            v = _EN_LEAD.sub("", v) if slot in ("user.likes", "user.dislikes") else v
        v = re.sub(
            r"\s+(?:now|anymore|any more|lol|haha|btw|too|so much|a lot|lately|recently|these days)$",
            "",
            v,
            flags=IGNORE,
        )
    if slot.endswith(("home_city", "hometown")):
        v = _DURATION_CN.sub("", v)
    v = v.strip(" .,!~")
    if not v or v.lower() in _NOT_VALUES:
        return ""
    named = slot in ("user.name", "user.nickname") or slot.endswith(".name")
    if named and (len(v) > 24 or (re.search(rf"[{_CJK}]", v) and len(v) > 4)):
        return ""
    return v[:40]


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern and how its match becomes (slot, value) pairs."""

    pattern: re.Pattern[str]
    read: Callable[[re.Match[str]], list[tuple[str, str]]]
    #: The pattern names the user itself (我/I/my), so a third-person sentence start is no bar.
    first_person: bool = True
    change: bool = False

    @property
    def english(self) -> bool:
        """An English rule (it starts at a word boundary): skipped for text without Latin."""
        return self.pattern.pattern.startswith("\\b")


def _one(slot: str) -> Callable[[re.Match[str]], list[tuple[str, str]]]:
    return lambda m: [(slot, m.group("v"))]


def _keyed(
    prefix: str, table: dict[str, str], suffix: str = ".name"
) -> Callable[[re.Match[str]], list[tuple[str, str]]]:
    def read(m: re.Match[str]) -> list[tuple[str, str]]:
        kind = table.get(m.group("k").lower())
        return [(f"{prefix}{kind}{suffix}", m.group("v"))] if kind else []

    return read


def _plan(kind: str) -> Callable[[re.Match[str]], list[tuple[str, str]]]:
    def read(m: re.Match[str]) -> list[tuple[str, str]]:
        event = re.sub(r"^(?:(?:去|来|到)(?:参加)?|参加)(?=..)", "", m.group("e").strip())
        event = re.sub(r"(?:了|啦|呀|哦|吧|啊|呢)+$", "", event)
        event = re.sub(r"^(?:a|an|the|my)\s+", "", event, flags=IGNORE).strip()
        when = re.sub(r"^on\s+", "", m.group("t").strip(), flags=IGNORE)
        return [(f"user.{kind}.{event}", when)] if event and when else []

    return read


def _alt(words: dict[str, str] | tuple[str, ...]) -> str:
    return "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))


def _r(pattern: str, read: Callable[[re.Match[str]], list[tuple[str, str]]], **kw: object) -> Rule:
    return Rule(re.compile(pattern, IGNORE), read, **kw)  # type: ignore[arg-type]


_SP_CN, _SP_EN = _alt(_SPECIES_CN), _alt(_SPECIES_EN)
_REL_CN, _REL_EN = _alt(_RELATION_CN), _alt(_RELATION_EN)
_DATE_CN = (
    r"(?:(?:\d{1,2}|[一二三四五六七八九十]{1,3}|正|冬|腊)月(?:\d{1,2}|[一二三四五六七八九十]{1,3}|"
    r"初[一二三四五六七八九十]|廿[一二三四五六七八九])[号日]?|农历[^\s,。!]{2,8}|\d{1,2}[./-]\d{1,2})"
)
_DATE_EN = (
    r"(?:(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?|"
    r"\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*|"
    r"\d{1,2}[/.-]\d{1,2})"
)
_ADV_CN = r"(?:真的|超级|超|特别|非常|很|好|挺|还是|也|一直|蛮|可|巨|贼|最|都|比较|还挺|真)*"
_ADV_EN = r"(?:really |totally |absolutely |just |honestly |kinda |actually |also |still )*"
_EN_END = r"(?=\s*(?:[,.!;)~\x00]|$|\s(?:and|but|so|because|since|now|lol|haha|btw|though|in|on|with|for|after|before|until|last|this|next|ago|when|yesterday|today|tomorrow|recently)\b|\s*[^\x00-\x7f]))"

RULES: tuple[Rule, ...] = (
    # --- identity ---------------------------------------------------------------------------
    _r(r"我(?:的)?名字(?:是|叫)\s*" + NAME, _one("user.name")),
    _r(r"(?<![你他她它叫])我(?:现在|改名|以后)?叫(?!做)\s*" + NAME, _one("user.name")),
    _r(
        r"(?:^|[,\x00]\s*)(?:我)?(?:改名了?[,]?\s*)?现在叫\s*" + NAME,
        _one("user.name"),
        change=True,
    ),
    _r(
        r"(?<![他她它])(?:你|大家|朋友们?|他们|家里人)?(?:都|可以|就|以后)*(?:叫|喊)我\s*" + NAME,
        _one("user.nickname"),
    ),
    _r(r"我的?(?:小名|昵称|外号|网名)(?:是|叫)\s*" + NAME, _one("user.nickname")),
    _r(r"\bmy name(?:'s| is)\s+" + NAME, _one("user.name")),
    _r(r"\b(?:you can |u can |just |please |pls )*call me\s+" + NAME, _one("user.nickname")),
    _r(r"\bmy nickname(?:'s| is)\s+" + NAME, _one("user.nickname")),
    _r(r"\b(?:i'm|i am|im)\s+(?:called|named)\s+" + NAME, _one("user.name")),
    _r(
        r"我(?:今年|已经|都|才|马上|快)?(?P<v>\d{1,2}|[一二三四五六七八九十]{1,3})(?:周)?岁",
        _one("user.age"),
    ),
    _r(
        r"\b(?:i'm|i am|im)\s+(?P<v>\d{1,2})(?:\s*(?:years?|yrs?) old|(?=\s*(?:[,.!]|$|\s(?:and|but|lol|now|btw)\b)))",
        _one("user.age"),
    ),
    _r(r"\bi (?:just )?turned (?P<v>\d{1,2})\b", _one("user.age"), change=True),
    _r(
        r"我(?:的)?生日(?:是|在)?\s*(?P<v>(?:\d{1,2}|[一二三四五六七八九十]{1,3})月(?:\d{1,2}|[一二三四五六七八九十]{1,3}|初[一二三四五六七八九十])[号日]?|农历[^\s,。!]{2,8}|\d{1,2}[./-]\d{1,2})",
        _one("user.birthday"),
    ),
    _r(
        r"我(?P<v>(?:\d{1,2}|[一二三四五六七八九十]{1,3})月(?:\d{1,2}|[一二三四五六七八九十]{1,3})[号日])(?:过)?生日",
        _one("user.birthday"),
    ),
    _r(
        r"\bmy birthday(?:'s| is)\s+(?:on\s+)?(?P<v>(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?|\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*|\d{1,2}[/.-]\d{1,2})",
        _one("user.birthday"),
    ),
    _r(
        r"\bi was born on\s+(?P<v>(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?|\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*)",
        _one("user.birthday"),
    ),
    # --- pets and family --------------------------------------------------------------------
    _r(
        rf"我(?:家|的|家的|们家|们家的|养的)?(?:那只|这只|那条|这条|小)?(?P<k>{_SP_CN})(?:是(?:一)?(?:只|条)[{_CJK}]{{1,5}}?[,\s]+)?(?:的名字|现在|改名)?(?:叫|是)\s*"
        + NAME,
        _keyed("user.pet.", _SPECIES_CN),
    ),
    _r(
        rf"我(?:家)?(?:养了|有|新养了|捡了|领养了)(?:一|两|三)?(?:只|条|个)?(?P<k>{_SP_CN})[,\s]*(?:它|她|他)?(?:的名字)?(?:叫|名叫|叫做)\s*"
        + NAME,
        _keyed("user.pet.", _SPECIES_CN),
    ),
    _r(
        rf"\b(?:my|our) (?:new )?(?P<k>{_SP_EN})(?:'s name is|'s called| is called| is named|'s named| named| called)\s+"
        + NAME,
        _keyed("user.pet.", _SPECIES_EN),
    ),
    _r(
        rf"\b(?:my|our) (?P<k>{_SP_EN})\s*(?:叫|的名字是|名叫)\s*" + NAME,
        _keyed("user.pet.", _SPECIES_EN),
    ),
    _r(
        rf"\b(?:i|we) (?:have|got|adopted|own|just got|just adopted) (?:a|an|one|two) (?:(?:new|little|cute|black|white|orange|fat|tiny|old|{_SP_EN}) )*(?P<k>{_SP_EN})\s*,?\s*(?:called|named|whose name is|her name is|his name is)\s+"
        + NAME,
        _keyed("user.pet.", _SPECIES_EN),
    ),
    _r(
        rf"我(?:的)?(?P<k>{_REL_CN})(?:的名字)?(?:叫|名叫|名字是)\s*" + NAME,
        _keyed("user.family.", _RELATION_CN),
    ),
    _r(
        rf"我(?:的)?(?P<k>{_REL_CN})(?:现在|目前|以前)?(?:是|当|做)(?:一名|一个|个|名|位)?(?P<v>{_JOB_CN})",
        _keyed("user.family.", _RELATION_CN, ".job"),
    ),
    _r(
        rf"我(?:的)?(?P<k>{_REL_CN})(?:现在|目前|一直)?(?:住在|住)(?!院|宿舍|的|了|过|着|一|几|进)"
        + CN_RUN,
        _keyed("user.family.", _RELATION_CN, ".home_city"),
    ),
    _r(
        rf"\bmy (?P<k>{_REL_EN})(?: is|'s) (?:a|an) (?:(?:new|junior|senior|retired|part-time) )?(?P<v>{_JOBS_EN})\b",
        _keyed("user.family.", _RELATION_EN, ".job"),
    ),
    _r(
        rf"\bmy (?P<k>{_REL_EN}) (?:now |still )?works as (?:a|an) (?P<v>[a-z][a-z ]{{1,30}}?)(?=\s+(?:at|in|for|and|but|now)\b|\s*[,.!;~\x00]|$)",
        _keyed("user.family.", _RELATION_EN, ".job"),
    ),
    _r(
        rf"\bmy (?P<k>{_REL_EN}) (?:now |currently |still )?lives in " + EN_WORDS + _EN_END,
        _keyed("user.family.", _RELATION_EN, ".home_city"),
    ),
    _r(
        rf"我(?:的)?(?P<k>{_REL_CN})的生日(?:是|在)?\s*(?P<v>{_DATE_CN})",
        _keyed("user.family.", _RELATION_CN, ".birthday"),
    ),
    _r(
        rf"\bmy (?P<k>{_REL_EN})'s birthday(?:'s| is)\s+(?:on\s+)?(?P<v>{_DATE_EN})",
        _keyed("user.family.", _RELATION_EN, ".birthday"),
    ),
    _r(
        rf"\bmy (?P<k>{_REL_EN})(?:'s name is|'s called| is called| is named|'s named| named)\s+"
        + NAME,
        _keyed("user.family.", _RELATION_EN),
    ),
    # --- work, school, schedule ---------------------------------------------------------------
    _r(rf"我(?:现在|目前)?(?:是|当|做)(?:一名|一个|个|名|位)?(?P<v>{_JOB_CN})", _one("user.job")),
    _r(
        rf"(?:我|^|[,\x00]\s*)(?:现在|目前|最近)?(?:还|也)?在[^,\x00]{{1,14}}?(?:做|当)(?:一名|一个|个|名|位)?(?P<v>{_JOB_CN})",
        _one("user.job"),
        first_person=False,
    ),
    _r(rf"我(?:的)?(?:工作|职业)是(?P<v>[{_CJK}A-Za-z]{{2,8}})", _one("user.job")),
    _r(
        rf"\b(?:i'm|i am|im) (?:a|an) (?:(?:new|junior|senior|freelance|full-time|part-time|trainee|student) )?(?P<v>{_JOBS_EN})\b",
        _one("user.job"),
    ),
    _r(
        r"\bi work as (?:a|an) (?P<v>[a-z][a-z ]{1,30}?)(?=\s+(?:at|in|for|and|but|now)\b|\s*[,.!;~\x00]|$)",
        _one("user.job"),
    ),
    _r(
        rf"(?:我|^|[,\x00]\s*)(?:现在|目前|最近)?(?:还|也)?在(?P<v>一(?:家|个|所)[{_CJK}A-Za-z0-9]{{1,14}}?(?:公司|工作室|工厂|医院|学校|银行|餐厅|酒店|店|机构|事务所))",
        _one("user.workplace"),
        first_person=False,
    ),
    _r(
        rf"(?:我|^|[,\x00]\s*)(?:现在|目前|最近)?(?:还|也)?在(?P<v>[{_CJK}A-Za-z0-9]{{1,12}}?)(?:上班|工作|打工|实习|当|做|上(?:{_SHIFTS_CN}))",
        _one("user.workplace"),
        first_person=False,
    ),
    _r(
        rf"(?:我|^|[,\x00]\s*)[^,\x00]{{0,8}}?上(?P<v>{_SHIFTS_CN})",
        _one("user.schedule"),
        first_person=False,
    ),
    _r(rf"我(?:是|们是)?(?P<v>{_SHIFTS_CN})", _one("user.schedule")),
    _r(
        rf"\bi(?:'m| am)? (?:work(?:ing)?|do|on|doing|pull(?:ing)?) (?P<v>{_SHIFTS_EN})\b",
        _one("user.schedule"),
    ),
    _r(
        rf"\bi (?:work|do|am on|'m on|work(?:ing)?) (?:{_SHIFTS_EN}) at (?P<v>(?:the )?[A-Za-z][\w'&-]*(?: [A-Za-z][\w'&-]*){{0,2}}?)"
        + _EN_END,
        _one("user.workplace"),
    ),
    _r(
        r"\bi (?:now )?work (?:at|for) (?P<v>(?:the )?[A-Za-z][\w'&.-]*(?: [A-Za-z][\w'&.-]*){0,2}?)"
        + _EN_END,
        _one("user.workplace"),
    ),
    _r(
        r"\b(?:i'm|i am|im) (?:now )?(?:a|an|the) (?!(?:\w+ )?(?:student|pupil|freshman|sophomore)\b)[a-z][\w -]{1,30}? (?:at|for) (?:a |an |the )?(?:[\w-]+ ){0,3}?(?:called|named) (?P<v>(?-i:[A-Z][\w'&.-]*(?: [A-Z][\w'&.-]*){0,3}))",
        _one("user.workplace"),
    ),
    _r(
        r"\b(?:i'm|i am|im) (?:now )?(?:a|an|the) (?!(?:\w+ )?(?:student|pupil|freshman|sophomore)\b)[a-z][\w -]{1,30}? (?:at|for) (?P<v>(?-i:[A-Z][\w'&.-]*(?: [A-Z][\w'&.-]*){0,3}))",
        _one("user.workplace"),
    ),
    _r(
        r"\b(?:got|started) a new job at (?P<v>(?:the )?[A-Za-z][\w'&.-]*(?: [A-Za-z][\w'&.-]*){0,2}?)"
        + _EN_END,
        _one("user.workplace"),
        change=True,
    ),
    _r(
        rf"我(?:现在|目前)?在(?P<v>[{_CJK}A-Za-z]{{1,10}}?)(?:读研|读博|读书|上学|念书|读大学|上大学|读高中|上高中|读初中|读|念|上课)",
        _one("user.school"),
    ),
    _r(
        r"\b(?:i (?:go to|attend|study at)|i'm (?:a student|studying \w+) at|i am (?:a student|studying \w+) at) (?P<v>(?:the )?[A-Za-z][\w'&.-]*(?: [A-Za-z][\w'&.-]*){0,3}?)"
        + _EN_END,
        _one("user.school"),
    ),
    _r(
        r"我(?:现在|目前)?(?:还|正)?在(?:读|念)(?P<v>研究生|硕士|博士|大学|本科|高中|初中)(?!的)",
        lambda m: [("user.job", _STUDENT_CN[m.group("v")])],
    ),
    _r(
        rf"(?:我|^|[,\x00]\s*)(?:的|现在|目前)?(?:专业是|主修|学的专业是)(?P<v>[{_CJK}A-Za-z]{{2,10}})",
        _one("user.major"),
        first_person=False,
    ),
    _r(
        r"\b(?:i(?:'m| am) (?:majoring|a major) in|my major is|i major in|i(?:'m| am) studying) (?P<v>[a-z][a-z ]{1,30}?)"
        + _EN_END,
        _one("user.major"),
    ),
    # --- places -------------------------------------------------------------------------------
    _r(
        r"我(?:现在|目前|一直)?(?:住在|住)(?!院|宿舍|的|了|过|着|一|几|进)" + CN_RUN,
        _one("user.home_city"),
    ),
    _r(
        r"(?:我|我们|我家|^|[,\x00]\s*)(?:已经|刚|上个月|去年|前段时间|最近|终于)?(?:搬到了?|搬去了?|搬家到|搬回了?|移居到?)\s*(?:老家|家乡)?"
        + CN_RUN,
        _one("user.home_city"),
        change=True,
    ),
    _r(
        r"(?:^|[,\x00]\s*)(?:现在|目前|一直)?住在" + CN_RUN,
        _one("user.home_city"),
        first_person=False,
    ),
    _r(r"我现在是" + rf"(?P<v>[{_CJK}]{{2,6}}?)人", _one("user.home_city"), change=True),
    _r(r"我(?:是|算)(?P<v>[\u4e00-\u9fff]{2,6}?)人(?![员气生])", _one("user.hometown")),
    _r(r"我(?:的)?老家(?:是|在)?" + CN_RUN, _one("user.hometown")),
    _r(r"我来自" + CN_RUN, _one("user.hometown")),
    _r(
        r"\bi(?:'ve been| have been|'m| am)? (?:currently |still |now )?(?:live|living) in "
        + EN_WORDS
        + _EN_END,
        _one("user.home_city"),
    ),
    _r(
        r"\b(?:i|we) (?:just |recently |finally )?(?:moved|relocated) (?:to|back to) "
        + EN_WORDS
        + _EN_END,
        _one("user.home_city"),
        change=True,
    ),
    _r(r"\b(?:i'm|i am|im) (?:originally )?from " + EN_WORDS + _EN_END, _one("user.hometown")),
    _r(r"\bmy hometown is " + EN_WORDS + _EN_END, _one("user.hometown")),
    _r(r"\bi grew up in " + EN_WORDS + _EN_END, _one("user.hometown")),
    _r(
        rf"(?:去|在)(?P<v>[{_CJK}]{{0,8}}?(?:健身房|游泳馆|游泳池|攀岩馆|瑜伽馆|羽毛球馆|球馆|拳馆|舞蹈室|跆拳道馆))",
        _one("user.gym"),
        first_person=False,
    ),
    _r(
        r"\b(?<!don't )(?<!dont )(?<!not )(?<!never )(?<!stopped )(?:switched to|go to|going to|started going to|joined|signed up (?:at|for)) (?:a |an |the )?(?P<v>[a-z][\w -]{0,25}?(?:gym|pool|studio|club|dojo|rink|court))\b",
        _one("user.gym"),
    ),
    # --- likes, dislikes, allergies, favourites -----------------------------------------------
    _r(
        rf"我{_ADV_CN}(?:最)?喜欢的(?P<k>[{_CJK}]{{1,6}}?)(?:是|就是)\s*" + CN_RUN,
        lambda m: [(f"user.favourite.{m.group('k')}", m.group("v"))],
    ),
    _r(
        rf"我{_ADV_CN}最爱的(?P<k>[{_CJK}]{{1,6}}?)(?:是|就是)\s*" + CN_RUN,
        lambda m: [(f"user.favourite.{m.group('k')}", m.group("v"))],
    ),
    _r(
        r"\bmy (?:fav|favou?rite|fave) (?P<k>[a-z]+(?: [a-z]+)?) (?:is|are|'s|=) (?P<v>[A-Za-z0-9][\w'&.-]*(?: [A-Za-z0-9][\w'&.-]*){0,3}?)"
        + _EN_END,
        lambda m: [(f"user.favourite.{m.group('k').lower()}", m.group("v"))],
    ),
    _r(
        rf"我(?:已经|现在)?(?:不再|不)喜欢(?:吃|喝|看|玩|听)?(?P<v>[{_CJK}A-Za-z]{{1,10}}?)了",
        _one("user.dislikes"),
        change=True,
    ),
    _r(
        rf"我(?:已经|现在)?不再(?:吃|喝)(?P<v>[{_CJK}A-Za-z]{{1,10}})",
        _one("user.dislikes"),
        change=True,
    ),
    _r(
        rf"我{_ADV_CN}(?:讨厌|不喜欢|受不了|不爱|不吃|不喝|怕)(?:吃|喝|看|玩|听)?(?P<v>[{_CJK}A-Za-z]{{1,10}})",
        _one("user.dislikes"),
    ),
    _r(
        rf"我{_ADV_CN}(?<!不)(?:喜欢|爱)(?!的|你|过|死|这|那|和|跟|上|被|着)(?:吃|喝|看|玩|听)?(?P<v>[{_CJK}A-Za-z]{{1,10}})",
        _one("user.likes"),
    ),
    _r(
        rf"我{_ADV_CN}(?:最近)?(?:迷上了?|爱上了?)(?!你|他|她|一个人|了)(?:吃|喝|看|玩|听)?(?P<v>[{_CJK}A-Za-z]{{1,10}})",
        _one("user.likes"),
    ),
    _r(
        r"\bi(?:'m|'ve been| am| have been) (?:really |so |totally |kinda )?into " + EN_OBJ,
        _one("user.likes"),
    ),
    _r(r"\bi (?:can't|cannot|can not) (?:eat|drink|have) " + EN_OBJ, _one("user.allergy")),
    _r(rf"我(?:对)?(?P<v>[{_CJK}A-Za-z]{{1,8}}?)过敏", _one("user.allergy")),
    _r(
        r"\bi(?:'m| am|m)? (?:very |really |super |severely )?allergic to " + EN_OBJ,
        _one("user.allergy"),
    ),
    _r(
        r"\bi (?:don't|do not|dont|no longer|never) (?:eat|drink|like|love|enjoy) "
        + EN_OBJ
        + r"(?= anymore| any more)",
        _one("user.dislikes"),
        change=True,
    ),
    _r(r"\bi no longer (?:eat|drink|like|enjoy) " + EN_OBJ, _one("user.dislikes"), change=True),
    _r(
        r"\bi(?:'m| am) (?:a )?(?:vegetarian|vegan) now",
        lambda m: [("user.dislikes", "meat")],
        change=True,
    ),
    _r(
        r"\bi "
        + _ADV_EN
        + r"(?:hate|dislike|can't stand|cant stand|don't like|dont like|do not like) "
        + EN_OBJ,
        _one("user.dislikes"),
    ),
    _r(
        r"\bi " + _ADV_EN + r"(?:love|like|adore|enjoy|am into|'m into) " + EN_OBJ,
        _one("user.likes"),
    ),
    # --- plans, events, new things ------------------------------------------------------------
    _r(
        rf"(?P<t>{_TIME_CN})我?(?:要|得|准备|打算|会|约了)(?P<e>[{_CJK}A-Za-z]{{2,10}})",
        _plan("plan"),
        first_person=False,
    ),
    _r(
        rf"我(?P<t>{_TIME_CN})(?:要|得|准备|打算|会|约了)(?P<e>[{_CJK}A-Za-z]{{2,10}})",
        _plan("plan"),
    ),
    _r(
        rf"(?:我|^|[,\x00]\s*)(?:要|得|准备|打算|计划|约了)(?P<t>{_TIME_CN})(?P<e>[{_CJK}A-Za-z]{{2,10}})",
        _plan("plan"),
        first_person=False,
    ),
    _r(
        rf"(?P<e>[{_CJK}]{{2,6}})(?:改到|改成|推到)了?(?P<t>{_TIME_CN})", _plan("plan"), change=True
    ),
    _r(
        rf"\bi(?: have| got|'ve got| have got) (?:a|an|my) (?P<e>[a-z][a-z' ]{{2,30}}?) (?:on |in )?(?P<t>{_TIME_EN})\b",
        _plan("plan"),
    ),
    _r(
        rf"\bremind me (?:on )?(?P<t>{_TIME_EN}) to (?P<e>[a-z][a-z' ]{{2,30}}?)" + _EN_END,
        _plan("plan"),
    ),
    _r(rf"\bremind me to (?P<e>[a-z][a-z' ]{{2,30}}?) (?:on )?(?P<t>{_TIME_EN})\b", _plan("plan")),
    _r(
        rf"\bi(?:'m| am) (?:going to|gonna) (?P<e>[a-z][a-z' ]{{2,30}}?) (?:on |in )?(?P<t>{_TIME_EN})\b",
        _plan("plan"),
    ),
    _r(
        rf"\bi promise (?:i'll|i will|to) (?P<e>[a-z][a-z' ]{{2,30}}?) (?:on |in )?(?P<t>{_TIME_EN})\b",
        _plan("promise"),
    ),
    _r(
        rf"\bi(?:'m| am) (?:training|preparing|signed up|registered) for (?:a|an|the|my) (?P<e>[a-z][a-z' -]{{2,30}}?) (?:on |in )?(?P<t>{_TIME_EN})\b",
        _plan("plan"),
    ),
    _r(
        rf"(?:我|^|[,\x00]\s*)(?:答应(?:过)?你(?:的|了)?|保证|发誓)[,\s]*(?P<t>{_TIME_CN})(?:一定|会|就)*(?P<e>[{_CJK}]{{2,10}})",
        _plan("promise"),
        first_person=False,
    ),
    _r(
        rf"(?P<t>{_PAST_CN})我(?:去|刚)?(?P<e>[{_CJK}]{{1,4}}了[{_CJK}]{{1,8}})(?=[,.!~\x00]|$)",
        _plan("event"),
    ),
    _r(rf"(?P<t>{_PAST_CN})我(?:去)?(?P<e>[{_CJK}]{{2,8}}?)了(?=[,.!~\x00]|$)", _plan("event")),
    _r(
        rf"(?:我|我们)(?:换了|换了个|换了一个|有了|有个)(?:新的?)(?P<k>{_alt(_THINGS_CN)})[,\s]*(?:叫|是|姓)\s*"
        + CN_RUN,
        lambda m: [(f"user.{_THINGS_CN[m.group('k')]}", m.group("v"))],
        change=True,
    ),
    _r(
        rf"我(?:们)?(?:的)?新(?P<k>{_alt(_THINGS_CN)})(?:叫|是|姓)\s*" + CN_RUN,
        lambda m: [(f"user.{_THINGS_CN[m.group('k')]}", m.group("v"))],
        change=True,
    ),
    _r(
        r"\b(?:my|our) (?P<k>vet|doctor|dentist|therapist|landlord|coach) (?:is|'s) (?P<v>(?-i:(?:Dr\.? |Mr\.? |Ms\.? |Mrs\.? )?[A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}?))"
        + _EN_END,
        lambda m: [(f"user.{m.group('k').lower()}", m.group("v"))],
    ),
    _r(
        r"我(?:们)?(?:家)?的?(?P<k>兽医|医生|牙医|心理医生)(?:是|叫|姓)\s*" + CN_RUN,
        lambda m: [(f"user.{_THINGS_CN[m.group('k')]}", m.group("v"))],
    ),
    _r(
        rf"\b(?:i|we) (?:got|have|found|switched to) a new (?P<k>{_alt(_THINGS_EN)})\s*,?\s*(?:called |named )?(?P<v>(?-i:(?:Dr\.? |Mr\.? |Ms\.? |Mrs\.? )?[A-Z][\w'.-]*(?: [A-Z][\w'.-]*){{0,2}}?))"
        + _EN_END,
        lambda m: [(f"user.{m.group('k').lower()}", m.group("v"))],
        change=True,
    ),
    _r(
        rf"\b(?:my|our) new (?P<k>{_alt(_THINGS_EN)}) (?:is|'s) (?P<v>(?:Dr\. |Dr )?[A-Za-z][\w'.-]*(?: [A-Z][\w'.-]*){{0,2}}?)"
        + _EN_END,
        lambda m: [(f"user.{m.group('k').lower()}", m.group("v"))],
        change=True,
    ),
)
