# ruff: noqa: E501  (regular expressions read best on one line)
"""Building blocks of the fact rules: the :class:`Rule` type, its readers and the pattern pieces
the rule tables share (names, runs of words, dates, adverbs, where an English value ends).

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from nekoflow.memory.fact_vocab import (
    BREEDS_CN,
    BREEDS_EN,
    RELATION_CN,
    RELATION_EN,
    SPECIES_CN,
    SPECIES_EN,
)

IGNORE = re.IGNORECASE
Reader = Callable[[re.Match[str]], list[tuple[str, str]]]
"""How a rule's match becomes (slot, value) pairs."""

CJK = r"\u4e00-\u9fff"
NAME = rf"[“\"「『']?(?P<v>(?![了过着不没个一你他她它们醒起出去来帮给做别吃回干的只条头])[{CJK}·]{{1,5}}|[A-Za-z][A-Za-z'-]{{0,20}}(?-i: [A-Z][a-z'-]+)?)"
CN_RUN = rf"(?P<v>[{CJK}A-Za-z0-9·]{{1,16}})"
EN_WORDS = r"(?P<v>[A-Za-z0-9](?:[\w'&-]|\.(?=\w))*(?: (?!(?:now|and|but|with|since|because|so|for|at|in|near|too|lol|haha|btw|though|anymore|any|very|much|a lot|these days|last|this|next|originally|tbh|ngl|rn|fwiw|lmao|which|who|bc|cuz|like|about|around|over|ago|again|hands down|no debate|for sure)\b)[A-Za-z0-9](?:[\w'&-]|\.(?=\w))*){0,3})"
EN_OBJ = r"(?P<v>(?!(?:you|it|that|this|them|him|her|me|to|when|how|being)\b)[A-Za-z][\w'-]*(?: (?!(?:so|too|very|much|a lot|anymore|any|at all|lol|haha|but|and|though|tho|now|either|because|since|more|these|when|if|it|they|he|she|i|we|which|who|that|bc|cuz|cause|tbh|rn|ngl|fr|lmao|btw|again|tastes|smells|looks|sounds|feels|is|are|was|were|makes|sucks|gives|hands down|no debate|for sure|forever)\b)[A-Za-z][\w'-]*){0,2})"


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern and how its match becomes (slot, value) pairs."""

    pattern: re.Pattern[str]
    read: Reader
    #: The pattern names the user itself (我/I/my), so a third-person sentence start is no bar.
    first_person: bool = True
    change: bool = False
    #: "en" for an English rule that does not start at a word boundary (a clause start).
    lang: str = ""

    @property
    def english(self) -> bool:
        """An English rule (it starts at a word boundary, or says so): skipped for text
        without Latin letters; every other rule is skipped for text without Han."""
        return self.lang == "en" or self.pattern.pattern.startswith("\\b")


def one(slot: str) -> Reader:
    return lambda m: [(slot, m.group("v"))]


def keyed(prefix: str, table: dict[str, str], suffix: str = ".name") -> Reader:
    def read(m: re.Match[str]) -> list[tuple[str, str]]:
        kind = table.get(m.group("k").lower())
        return [(f"{prefix}{kind}{suffix}", m.group("v"))] if kind else []

    return read


def pet(table: dict[str, str]) -> Reader:
    """A pet's name (group ``v``) by its species (group ``k``, a key of ``table``); a value that
    is itself a species or breed word ("我家兔子是垂耳兔") is the pet's breed, or nothing."""

    def read(m: re.Match[str]) -> list[tuple[str, str]]:
        kind, value = table.get(m.group("k").lower()), m.group("v")
        word = value.strip().lower()
        breed_of = BREEDS_CN.get(value.strip()) or BREEDS_EN.get(word)
        if breed_of:
            return [(f"user.pet.{breed_of}.breed", value.strip())]
        if not kind or word in SPECIES_EN or value.strip() in SPECIES_CN:
            return []
        return [(f"user.pet.{kind}.name", value)]

    return read


def several(table: dict[str, str]) -> Reader:
    """Each name of several pets of one species ("养了两只仓鼠，一只叫芝麻一只叫汤圆")."""

    def read(m: re.Match[str]) -> list[tuple[str, str]]:
        kind = table.get(m.group("k").lower())
        names = re.findall(
            r"(?:一|另一|大|小)?(?:只|条|个)叫([\u4e00-\u9fffA-Za-z]{1,4}?)(?=一|另|和|,|\s|$|\x00)",
            m.group("rest"),
        )
        return [(f"user.pet.{kind}.name", n) for n in names] if kind else []

    return read


def breed(table: dict[str, str]) -> Reader:
    """A pet's breed (group ``k``, a key of ``table``, which gives the species)."""

    def read(m: re.Match[str]) -> list[tuple[str, str]]:
        word = m.group("k")
        kind = table.get(word.lower())
        return [(f"user.pet.{kind}.breed", word)] if kind else []

    return read


UNDATED = frozenset({"答应过", "promised", "最近", "recently"})
"""The "when" of a promise or event said without a time (a dated statement of it wins)."""


def plan(kind: str, default: str = "") -> Reader:
    """A plan, promise or event (group ``e``) and when (group ``t``; ``default`` when none is
    said, else the match is no fact)."""

    def read(m: re.Match[str]) -> list[tuple[str, str]]:
        event = re.sub(r"^(?:的时候|那天)", "", m.group("e").strip())
        event = re.sub(r"^(?:跟|和)[\u4e00-\u9fff]{1,5}?(?=一起|去|来|到)", "", event)
        event = re.sub(r"^一起", "", event)
        event = re.sub(r"^(?:(?:去|来|到)(?:参加|一趟|一下)?|参加)(?=..)", "", event)
        event = re.sub(r"(?:了|啦|呀|哦|吧|啊|呢)+$", "", event)
        event = re.sub(r"^(?:a|an|the|my)\s+", "", event, flags=IGNORE).strip()
        said = m.groupdict().get("t") or ""
        when = re.sub(r"^on\s+", "", said.strip(), flags=IGNORE) or default
        return [(f"user.{kind}.{event}", when)] if event and when else []

    return read


def alt(words: dict[str, str] | tuple[str, ...]) -> str:
    return "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))


def rule(pattern: str, read: Reader, **kw: object) -> Rule:
    return Rule(re.compile(pattern, IGNORE), read, **kw)  # type: ignore[arg-type]


SP_CN, SP_EN = alt(SPECIES_CN), alt(SPECIES_EN)
REL_CN, REL_EN = alt(RELATION_CN), alt(RELATION_EN)
DATE_CN = (
    r"(?:(?:\d{1,2}|[一二三四五六七八九十]{1,3}|正|冬|腊)月(?:\d{1,2}|[一二三四五六七八九十]{1,3}|"
    r"初[一二三四五六七八九十]|廿[一二三四五六七八九])[号日]?|农历[^\s,。!]{2,8}|\d{1,2}[./-]\d{1,2})"
)
DATE_EN = (
    r"(?:(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?|"
    r"(?:the )?\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*|"
    r"\d{1,2}[/.-]\d{1,2})"
)
ADV_CN = r"(?:真的|超级|超|特别|非常|很|好|挺|还是|也|一直|蛮|可|巨|贼|最|都|比较|还挺|真){0,4}"
ADV_EN = r"(?:really |totally |absolutely |just |honestly |kinda |actually |also |still ){0,3}"
EN_END_AT = r"\s*(?:[,.!;)~\x00]|$|\s(?:and|but|so|because|since|now|lol|haha|btw|though|tho|in|on|at|with|for|after|before|until|last|this|next|ago|when|yesterday|today|tomorrow|recently|originally|tbh|ngl|rn|fwiw|lmao|lmfao|fyi|xd|hehe|omg|smh|jk|idk|which|who|bc|cuz|like|about|around|again|hands down|no debate|no cap|for sure|forever|fr|sophomore|freshman|junior|senior)\b|\s*[^\x00-\x7f])"
"""What may follow an English value: punctuation, the end, a joining word, other script."""
EN_END = rf"(?={EN_END_AT})"
I_AM = r"(?:i'm|i am|im|i m)"
""""I am", as chat spells it."""
AGE_EN = (
    r"(?:\d{1,2}|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty)(?:[- ](?:one|two|three|four|"
    r"five|six|seven|eight|nine))?|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen)"
)
"""An age in digits or words ("22", "twenty-five")."""
SURNAME_CN = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任"
    "沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤"
)
NAME_CN_SHORT = (
    rf"(?:小|阿|老)[{CJK}]|[{SURNAME_CN}](?:总|哥|姐|姨|叔|工|胖子|老师|经理|医生|大夫|主任|sir)"
    rf"|[{SURNAME_CN}][{CJK}](?=[,\s!~.]|$)"
)
"""A name said right after who the person is ("老板王总", "室友小琪", "组长刘姐")."""
NUM_CN = r"(?:\d{1,2}|[一二三四五六七八九十]{1,3})"
CLAUSE = (
    r"(?:^|(?<=[,\x00!~.;:])|(?<=[\u4e00-\u9fff] )|(?<=[A-Za-z] )(?=[\u4e00-\u9fff])"
    r"|(?<=[\u2600-\u27bf\U0001f000-\U0001faff]))\s*"
)
"""Where a clause starts (a subject-less clause: "刚搬到杭州", "live in Toronto")."""
