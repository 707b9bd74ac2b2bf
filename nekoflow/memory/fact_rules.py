# ruff: noqa: E501  (a table of regular expressions: one rule per line reads best)
"""The rules of :mod:`nekoflow.memory.facts`: which clauses ask, wish, speak of someone else or
say a change; how a value is trimmed; and every rule (:mod:`fact_rules_people`,
:mod:`fact_rules_work`, :mod:`fact_rules_life`, :mod:`fact_rules_plans`).

Every pattern runs on NFKC-normalised text (full-width punctuation is ASCII). Pure: no I/O.
"""

from __future__ import annotations

import re

from nekoflow.memory.fact_patterns import CJK, IGNORE, Rule
from nekoflow.memory.fact_rules_life import LIFE_RULES
from nekoflow.memory.fact_rules_people import PEOPLE_RULES
from nekoflow.memory.fact_rules_plans import PLAN_RULES
from nekoflow.memory.fact_rules_work import WORK_RULES
from nekoflow.memory.fact_vocab import RELATION_CN, RELATION_EN

__all__ = [
    "CHANGE",
    "FIRST_PERSON",
    "HYPOTHETICAL",
    "QUESTION_CLAUSE",
    "RULES",
    "THIRD_PERSON_START",
    "clean_value",
]

QUESTION_CLAUSE = re.compile(
    r"(?:什么|啥|哪|谁|几岁|多少|怎么|为什么|是不是|有没有|要不要|会不会|对不对|来着|吗|呢|么)"
    r"[\s!~.。]*$"
    r"|什么|哪里|哪儿|哪座|哪个|哪家|哪天|谁|多大|几号|几月"
    r"|^(?:what|where|who|when|why|how|which|whose|do|does|did|is|are|am|was|were|can(?!'t)|could|"
    r"would|will|should|shall|have|has|remember|you remember|u remember)\b"
    r"|\b(?:remember|recall) (?:what|where|who|when|my)\b",
    IGNORE,
)
"""A clause that asks: ends in a question particle, holds a wh-word, or starts like a question."""

_RELATIVES_CN = "|".join(sorted(map(re.escape, RELATION_CN), key=len, reverse=True))
_RELATIVES_EN = "|".join(sorted(map(re.escape, RELATION_EN), key=len, reverse=True))
HYPOTHETICAL = re.compile(
    r"^[\s\x00]*(?:如果|要是|假如|假设|万一|但愿|若是|本来|原本|本打算|原计划|"
    r"(?:if|i wish|wish|imagine|suppose|what if)\b)"
    r"|就好了[\s!~.。]*$|多好[\s!~.。啊呀]*$"
    r"|\b(?:was|were) (?:going to|gonna|supposed to|planning to)\b",
    IGNORE,
)
"""A clause that wishes, supposes or tells of a plan given up ("如果我住在北京就好了", "I wish I
lived in Paris", "本来下周要去北京的", "I was going to visit Rome"): no fact."""

FIRST_PERSON = re.compile(
    r"俺|咱|鄙人|(?:^|(?<=[,\x00\s!~.:;哈嗨呀啦哦嗯喂好]))(?:本人|在下|老子|小弟|小女子|本宝宝)"
    r"|(?<![配木无布玩人对土泥])偶(?=叫|是|的|家|今年|在|对|不|喜欢|最|也|还|现在|刚)"
)
"""Other ways of saying 我 (俺, 咱, 本人 at a clause start, 偶 before a verb): read as 我."""

_OTHERS_CN = "朋友|好友|同事|同学|舍友|老板|领导|哥们|兄弟|邻居|亲戚"
_OTHERS_EN = "friend|colleague|coworker|co-worker|classmate|neighbou?r|cousin|boss|roommate"
THIRD_PERSON_START = re.compile(
    rf"^[\s\x00]*(?:他|她|它|我的?(?:{_RELATIVES_CN}|{_OTHERS_CN})|"
    rf"(?:he|she|they|my (?:{_OTHERS_EN}|{_RELATIVES_EN})s?)\b)",
    IGNORE,
)
CHANGE = re.compile(
    r"搬到|搬去|搬家|换了|改名|改成|改到|改去|现在是|现在叫|现在在|不再|已经不|新的|新工作|辞职|戒了|"
    r"\b(?:moved|move|new|now|anymore|any more|no longer|changed|switched|renamed|quit)\b",
    IGNORE,
)

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
     "一家", "一个", "一所", "家", "个", "这边", "那边", "这里", "那里",
     "月球", "月球上", "火星", "火星上", "天上", "梦里", "外太空", "宇宙", "银河系"}
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
    if slot.endswith(".breed"):  # a word from the breed list, whole
        return v
    if re.search(rf"[{CJK}]", v):
        keep_de = slot.startswith(("user.plan.", "user.event."))
        if not slot.startswith(("user.plan", "user.event", "user.birthday")):
            cut = _CUT_CN.search(v, 1)
            if cut:
                v = v[: cut.start()]
        v = _TRAIL_CN.sub("", v) if not keep_de else re.sub(r"(?:了|啦|呀|哦|吧|啊|呢)+$", "", v)
    else:
        if slot in ("user.workplace", "user.vet"):
            v = re.sub(r"^(?:a|an)\s+", "", v, flags=IGNORE)
        else:
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
    if named and (len(v) > 24 or (re.search(rf"[{CJK}]", v) and len(v) > 4)):
        return ""
    return v[:40]


RULES: tuple[Rule, ...] = (*PEOPLE_RULES, *WORK_RULES, *LIFE_RULES, *PLAN_RULES)
"""Every rule, in the order they are tried."""
