# ruff: noqa: E501  (a table of regular expressions: one rule per line reads best)
"""The fact rules about what the user plans, promises and lives through, and who and what they use."""

from __future__ import annotations

import re

from nekoflow.memory.fact_patterns import (
    CJK,
    CLAUSE,
    CN_RUN,
    EN_END,
    EN_END_AT,
    I_AM,
    Rule,
    alt,
    one,
    plan,
    rule,
)
from nekoflow.memory.fact_vocab import (
    EVENTS_CN,
    EVENTS_EN,
    PAST_CN,
    PAST_EN,
    PHONES,
    THINGS_CN,
    THINGS_EN,
    TIME_CN,
    TIME_EN,
)


def _thing(m: re.Match[str]) -> list[tuple[str, str]]:
    """Someone or something the user has, by its Chinese word (兽医 → ``user.vet``)."""
    return [(f"user.{THINGS_CN[m.group('k')]}", m.group("v"))]


def _named_k(m: re.Match[str]) -> list[tuple[str, str]]:
    """Someone the user has, by its English word (``my vet`` → ``user.vet``)."""
    return [(f"user.{m.group('k').lower()}", m.group("v"))]


PLAN_RULES: tuple[Rule, ...] = (
    # --- plans, events, new things ------------------------------------------------------------
    rule(
        rf"(?P<t>{TIME_CN})(?:早上|上午|中午|下午|晚上|傍晚)?(?:我们|我)?(?:还|也|就|又|一起|必须|可能)*(?:要|得|准备|打算|会|约了)(?:一起)?(?P<e>[{CJK}A-Za-z]{{2,10}})",
        plan("plan"),
        first_person=False,
    ),
    rule(
        rf"我(?P<t>{TIME_CN})(?:要|得|准备|打算|会|约了)(?P<e>[{CJK}A-Za-z]{{2,10}})",
        plan("plan"),
    ),
    rule(
        rf"(?:我|^|[,\x00]\s*)(?:要|得|准备|打算|计划|约了)(?P<t>{TIME_CN})(?P<e>[{CJK}A-Za-z]{{2,10}})",
        plan("plan"),
        first_person=False,
    ),
    rule(rf"(?P<e>[{CJK}]{{2,6}})(?:改到|改成|推到)了?(?P<t>{TIME_CN})", plan("plan"), change=True),
    rule(
        rf"\bi(?: have| got|'ve got| have got) (?:a|an|my) (?P<e>[a-z][a-z' ]{{2,30}}?) (?:on |in )?(?P<t>{TIME_EN})\b",
        plan("plan"),
    ),
    rule(
        rf"\bremind me (?:on )?(?P<t>{TIME_EN}) to (?P<e>[a-z][a-z' ]{{2,30}}?)" + EN_END,
        plan("plan"),
    ),
    rule(rf"\bremind me to (?P<e>[a-z][a-z' ]{{2,30}}?) (?:on )?(?P<t>{TIME_EN})\b", plan("plan")),
    rule(
        rf"\bi(?:'m| am|m) (?:going to|gonna|planning to|planning on|about to) (?P<e>[a-z][a-z' ]{{2,30}}?) (?:on |in )?(?P<t>{TIME_EN})\b",
        plan("plan"),
    ),
    rule(
        rf"\b{I_AM} (?!(?:feeling|doing|being|getting|going|gonna|planning|thinking|trying|looking|kinda|so|not|still|just|really)\b)(?P<e>[a-z]+ing(?: [a-z]+){{0,3}}?) (?:on |in )?(?P<t>{TIME_EN})\b",
        plan("plan"),
    ),
    rule(
        rf"^\s*(?P<e>(?:flying|heading|driving|going|moving|off) to [a-z][a-z' ]{{1,25}}?) (?:on |in )?(?P<t>{TIME_EN})\b",
        plan("plan"),
        first_person=False,
        lang="en",
    ),
    rule(
        rf"(?P<t>{TIME_EN}),? {I_AM} (?:going|gonna|planning)(?: to| on)? (?P<e>[a-z][a-z' ]{{2,30}}?)"
        + EN_END,
        plan("plan"),
    ),
    rule(
        rf"(?P<t>{TIME_CN})(?:我们|我)?(?:就|也|还|一起)*(?P<e>(?:搬去|搬到|去|回|飞|出发去)(?!了)[{CJK}A-Za-z]{{2,8}})",
        plan("plan"),
        first_person=False,
    ),
    rule(
        rf"\bi (?:gotta|have to|need to|got to|'ll|will|ll) (?P<e>[a-z][a-z' ]{{2,30}}?) (?:on |in )?(?P<t>{TIME_EN})\b",
        plan("plan"),
    ),
    rule(
        rf"\b(?P<t>{TIME_EN})[,\s]*(?:我|我们)?(?:要|得|准备|打算|会)(?P<e>[{CJK}A-Za-z]{{2,10}})",
        plan("plan"),
    ),
    rule(
        rf"^\s*(?:gonna|going to|planning to|planning on|plan to) (?P<e>[a-z][a-z' ]{{2,30}}?) (?:on |in )?(?P<t>{TIME_EN})\b",
        plan("plan"),
        first_person=False,
        lang="en",
    ),
    rule(
        rf"\bi promise (?:i'll|i will|ill|to) (?P<e>[a-z][a-z' ]{{2,30}}?)(?=\s+(?:on |in )?(?:{TIME_EN})\b|{EN_END_AT})",
        plan("promise", "promised"),
    ),
    rule(
        rf"\bi(?:'ll| will|ll) (?:try to )?(?P<e>[a-z][a-z' ]{{2,30}}?) (?:on |in )?(?P<t>{TIME_EN})\b[^.!?\x00]{{0,5}}?,? i promise",
        plan("promise"),
    ),
    rule(
        rf"\bi promise (?:i'll|i will|to) (?P<e>[a-z][a-z' ]{{2,30}}?) (?:on |in )?(?P<t>{TIME_EN})\b",
        plan("promise"),
    ),
    rule(
        rf"\bi(?:'m| am) (?:training|preparing|signed up|registered) for (?:a|an|the|my) (?P<e>[a-z][a-z' -]{{2,30}}?) (?:on |in )?(?P<t>{TIME_EN})\b",
        plan("plan"),
    ),
    rule(
        rf"(?:我|^|[,\x00]\s*)(?:跟你|向你|和你)?(?:答应(?:过)?你(?:的|了)?|保证|发誓)[,\s]*(?P<t>{TIME_CN}|以后|今后|从今天起|从明天起|从今以后)(?:一定|会|就|再也|都)*(?P<e>[{CJK}]{{2,10}})",
        plan("promise"),
        first_person=False,
    ),
    rule(
        rf"(?:我|^|[,\x00]\s*)(?:跟你|向你|和你)?(?:答应(?:过)?你(?:的|了)?|保证|发誓)[,\s]*(?:我)?(?:一定|会|就|再也|都)*(?!{TIME_CN}|以后|今后|从)(?P<e>[{CJK}]{{2,10}}?)(?:的|了|啦)?(?=[,.!~\x00]|$)",
        plan("promise", "答应过"),
        first_person=False,
    ),
    rule(
        rf"(?:我|{CLAUSE})(?P<t>{PAST_CN})?(?:我)?(?:刚刚?|终于|已经|也|最近)*(?:把)?(?P<e>{EVENTS_CN})(?=了|啦|$|[,.!~\x00\s])",
        plan("event", "最近"),
        first_person=False,
    ),
    rule(
        rf"(?:\bi |{CLAUSE})(?:just |finally |recently |also )?(?P<e>{EVENTS_EN})(?: [a-z]+ing)?(?: (?P<t>{PAST_EN}))?(?=\s*(?:[,.!;~\x00]|$|[^\x00-\x7f])|\s(?:and|but|so|lol|lmao|haha|omg|at|by|in|to|from|with|on)\b)",
        plan("event", "recently"),
        first_person=False,
        lang="en",
    ),
    rule(
        rf"(?P<t>{PAST_CN})我(?:去|刚)?(?P<e>[{CJK}]{{1,4}}了[{CJK}]{{1,8}})(?=[,.!~\x00]|$)",
        plan("event"),
    ),
    rule(rf"(?P<t>{PAST_CN})我(?:去)?(?P<e>[{CJK}]{{2,8}}?)了(?=[,.!~\x00]|$)", plan("event")),
    rule(
        rf"(?:我|我们)(?:换了|换了个|换了一个|有了|有个)(?:新的?)(?P<k>{alt(THINGS_CN)})[,\s]*(?:叫|是|姓)\s*"
        + CN_RUN,
        _thing,
        change=True,
    ),
    rule(
        rf"我(?:们)?(?:的)?新(?P<k>{alt(THINGS_CN)})(?:叫|是|姓)\s*" + CN_RUN,
        _thing,
        change=True,
    ),
    rule(
        r"\b(?:my|our) (?P<k>vet|doctor|dentist|therapist|landlord|coach) (?:is|'s) (?P<v>(?-i:(?:Dr\.? |Mr\.? |Ms\.? |Mrs\.? )?[A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}?))"
        + EN_END,
        _named_k,
    ),
    rule(
        r"我(?:们)?(?:家)?的?(?P<k>兽医|医生|牙医|心理医生)(?:是|叫|姓)\s*" + CN_RUN,
        _thing,
    ),
    rule(
        rf"我(?:们)?(?:家)?(?:的|猫的|狗的|家猫的)?(?P<k>兽医|医生|牙医|心理医生|心理咨询师|咨询师|主治医生)(?:是)?(?:[{CJK}]{{2,6}}?的)?(?P<v>[{CJK}]{{1,2}}(?:医生|大夫|老师))",
        _thing,
    ),
    rule(
        rf"(?:宠物医院|诊所)的(?P<v>[{CJK}]{{1,2}}(?:医生|大夫))",
        lambda m: [("user.vet" if "宠物" in m.group() else "user.doctor", m.group("v"))],
    ),
    rule(
        r"\bthe (?P<k>vet|doctor|dentist),? (?P<v>(?:dr\.?|doctor) [a-z][\w'-]*)",
        _named_k,
    ),
    rule(
        rf"{CLAUSE}(?P<k>兽医|医生|牙医|心理医生)(?:是|叫|姓)\s*(?P<v>[{CJK}]{{1,3}}(?:医生|大夫)|[{CJK}]{{2,3}})(?=[,.!~\x00]|$)",
        _thing,
        first_person=False,
    ),
    rule(
        r"\bmy (?P<k>vet|doctor|dentist|therapist)(?:,| is|'s)? (?P<v>(?:dr\.?|doctor) [a-z][\w'-]*)",
        _named_k,
    ),
    rule(
        rf"我(?:们|的)?(?:老板|领导|组长|经理|主管|上司)(?:叫|是|姓)\s*(?P<v>[{CJK}]{{1,3}}(?:总|哥|姐|经理|老师)|[{CJK}]{{2,3}}|(?-i:[A-Z][a-z]+))(?=[,.!~\x00]|$|[{CJK}])",
        one("user.boss"),
    ),
    rule(
        r"\bmy (?:boss|manager|supervisor)(?:'s name is|(?: is|'s)? (?:literally |actually )?(?:called|named)) (?P<v>(?:(?:mr|mrs|ms|dr|miss)\.? ?)?[A-Za-z][A-Za-z'-]{0,20}(?-i: [A-Z][a-z'-]+)?)",
        one("user.boss"),
    ),
    rule(
        rf"(?:换了?(?:个|台|部)?新?(?:手机)?[,\s]*|(?:我|{CLAUSE})(?:现在)?用的(?:手机)?是\s*)(?P<v>{PHONES})",
        one("user.phone"),
        first_person=False,
    ),
    rule(
        rf"(?:\bi |^\s*)(?:just )?(?:got|bought|have|use|using|switched to) (?:a |an |the |my )?(?:new )?(?P<v>{PHONES})"
        + EN_END,
        one("user.phone"),
        first_person=False,
        lang="en",
    ),
    rule(
        rf"我(?:的|家的?)?(?:手机|电话)(?:是|用的是)\s*(?P<v>[{CJK}A-Za-z0-9][{CJK}A-Za-z0-9 +]{{1,15}}?)(?=[,.!~\x00]|$|用|[,])",
        one("user.phone"),
    ),
    rule(
        rf"(?:我|{CLAUSE})(?:家)?(?:的车是|开的是|的车是一辆|开的是一辆)(?:一辆)?(?:(?:白色|黑色|红色|蓝色|银色|灰色|二手|新)的?)?\s*(?P<v>[{CJK}A-Za-z0-9][{CJK}A-Za-z0-9 ]{{1,15}}?)(?=[,.!~\x00]|$|续航|[,])",
        one("user.car"),
    ),
    rule(
        rf"\bmy (?:phone|cell)(?:'s| is) (?:the |my )?(?P<v>{PHONES})" + EN_END,
        one("user.phone"),
    ),
    rule(
        r"\bmy (?:phone|cell)(?:'s| is) an? (?:new |old )?(?P<v>[a-z0-9][\w+-]*(?: [a-z0-9][\w+-]*){0,2}?)"
        + EN_END,
        one("user.phone"),
    ),
    rule(
        r"\b(?:i drive (?:an? )?|my car(?: is|'s) an? )(?:(?:old|new|used|little|beat-up|beat up|red|black|white|silver|blue) )*(?P<v>[a-z0-9][\w-]*(?: [a-z0-9][\w-]*){0,2}?)"
        + EN_END,
        one("user.car"),
    ),
    rule(
        rf"(?:(?:健身房|gym)(?:是|叫)\s*|(?:健身)?卡是在)(?P<v>[{CJK}A-Za-z][{CJK}A-Za-z ]{{1,20}}?)(?=办|[,.!~\x00\s]|$)",
        one("user.gym"),
    ),
    rule(
        rf"在(?P<v>[{CJK}A-Za-z][{CJK}A-Za-z ]{{1,10}}?)办了?(?:张|个)?(?:卡|健身卡|会员|年卡)",
        one("user.gym"),
        first_person=False,
    ),
    rule(
        r"\bmy gym(?:'s| is) (?P<v>[a-z][\w&'-]*(?: [a-z][\w&'-]*){0,2}?)" + EN_END,
        one("user.gym"),
    ),
    rule(
        rf"\b(?:i|we) (?:got|have|found|switched to) a new (?P<k>{alt(THINGS_EN)})\s*,?\s*(?:called |named )?(?P<v>(?-i:(?:Dr\.? |Mr\.? |Ms\.? |Mrs\.? )?[A-Z][\w'.-]*(?: [A-Z][\w'.-]*){{0,2}}?))"
        + EN_END,
        _named_k,
        change=True,
    ),
    rule(
        rf"\b(?:my|our) new (?P<k>{alt(THINGS_EN)}) (?:is|'s) (?P<v>(?:Dr\. |Dr )?[A-Za-z][\w'.-]*(?: [A-Z][\w'.-]*){{0,2}}?)"
        + EN_END,
        _named_k,
        change=True,
    ),
)
