# ruff: noqa: E501  (a table of regular expressions: one rule per line reads best)
"""The fact rules about the user's life: places, likes and dislikes, favourites, plans, promises, events and the people and things they use.

Every pattern runs on NFKC-normalised text with question and wish clauses blanked. Pure: no I/O.
"""

from __future__ import annotations

from nekoflow.memory.fact_patterns import (
    ADV_CN,
    ADV_EN,
    CJK,
    CN_RUN,
    EN_END,
    EN_OBJ,
    EN_WORDS,
    Rule,
    alt,
    one,
    plan,
    rule,
)
from nekoflow.memory.fact_vocab import (
    PAST_CN,
    THINGS_CN,
    THINGS_EN,
    TIME_CN,
    TIME_EN,
)

LIFE_RULES: tuple[Rule, ...] = (
    # --- places -------------------------------------------------------------------------------
    rule(
        r"我(?:现在|目前|一直)?(?:住在|住)(?!院|宿舍|的|了|过|着|一|几|进)" + CN_RUN,
        one("user.home_city"),
    ),
    rule(
        r"(?:我|我们|我家|^|[,\x00]\s*)(?:已经|刚|上个月|去年|前段时间|最近|终于)?(?:搬到了?|搬去了?|搬家到|搬回了?|移居到?)\s*(?:老家|家乡)?"
        + CN_RUN,
        one("user.home_city"),
        change=True,
    ),
    rule(
        r"(?:^|[,\x00]\s*)(?:现在|目前|一直)?住在" + CN_RUN,
        one("user.home_city"),
        first_person=False,
    ),
    rule(r"我现在是" + rf"(?P<v>[{CJK}]{{2,6}}?)人", one("user.home_city"), change=True),
    rule(r"我(?:是|算)(?P<v>[\u4e00-\u9fff]{2,6}?)人(?![员气生])", one("user.hometown")),
    rule(r"我(?:的)?老家(?:是|在)?" + CN_RUN, one("user.hometown")),
    rule(r"我来自" + CN_RUN, one("user.hometown")),
    rule(
        r"\bi(?:'ve been| have been|'m| am)? (?:currently |still |now )?(?:live|living) in "
        + EN_WORDS
        + EN_END,
        one("user.home_city"),
    ),
    rule(
        r"\b(?:i|we) (?:just |recently |finally )?(?:moved|relocated) (?:to|back to) "
        + EN_WORDS
        + EN_END,
        one("user.home_city"),
        change=True,
    ),
    rule(r"\b(?:i'm|i am|im) (?:originally )?from " + EN_WORDS + EN_END, one("user.hometown")),
    rule(r"\bmy hometown is " + EN_WORDS + EN_END, one("user.hometown")),
    rule(r"\bi grew up in " + EN_WORDS + EN_END, one("user.hometown")),
    rule(
        rf"(?:去|在)(?P<v>[{CJK}]{{0,8}}?(?:健身房|游泳馆|游泳池|攀岩馆|瑜伽馆|羽毛球馆|球馆|拳馆|舞蹈室|跆拳道馆))",
        one("user.gym"),
        first_person=False,
    ),
    rule(
        r"\b(?<!don't )(?<!dont )(?<!not )(?<!never )(?<!stopped )(?:switched to|go to|going to|started going to|joined|signed up (?:at|for)) (?:a |an |the )?(?P<v>[a-z][\w -]{0,25}?(?:gym|pool|studio|club|dojo|rink|court))\b",
        one("user.gym"),
    ),
    # --- likes, dislikes, allergies, favourites -----------------------------------------------
    rule(
        rf"我{ADV_CN}(?:最)?喜欢的(?P<k>[{CJK}]{{1,6}}?)(?:是|就是)\s*" + CN_RUN,
        lambda m: [(f"user.favourite.{m.group('k')}", m.group("v"))],
    ),
    rule(
        rf"我{ADV_CN}最爱的(?P<k>[{CJK}]{{1,6}}?)(?:是|就是)\s*" + CN_RUN,
        lambda m: [(f"user.favourite.{m.group('k')}", m.group("v"))],
    ),
    rule(
        r"\bmy (?:fav|favou?rite|fave) (?P<k>[a-z]+(?: [a-z]+)?) (?:is|are|'s|=) (?P<v>[A-Za-z0-9][\w'&.-]*(?: [A-Za-z0-9][\w'&.-]*){0,3}?)"
        + EN_END,
        lambda m: [(f"user.favourite.{m.group('k').lower()}", m.group("v"))],
    ),
    rule(
        rf"我(?:已经|现在)?(?:不再|不)喜欢(?:吃|喝|看|玩|听)?(?P<v>[{CJK}A-Za-z]{{1,10}}?)了",
        one("user.dislikes"),
        change=True,
    ),
    rule(
        rf"我(?:已经|现在)?不再(?:吃|喝)(?P<v>[{CJK}A-Za-z]{{1,10}})",
        one("user.dislikes"),
        change=True,
    ),
    rule(
        rf"我{ADV_CN}(?:讨厌|不喜欢|受不了|不爱|不吃|不喝|怕)(?:吃|喝|看|玩|听)?(?P<v>[{CJK}A-Za-z]{{1,10}})",
        one("user.dislikes"),
    ),
    rule(
        rf"我{ADV_CN}(?<!不)(?:喜欢|爱)(?!的|你|过|死|这|那|和|跟|上|被|着)(?:吃|喝|看|玩|听)?(?P<v>[{CJK}A-Za-z]{{1,10}})",
        one("user.likes"),
    ),
    rule(
        rf"我{ADV_CN}(?:最近)?(?:迷上了?|爱上了?)(?!你|他|她|一个人|了)(?:吃|喝|看|玩|听)?(?P<v>[{CJK}A-Za-z]{{1,10}})",
        one("user.likes"),
    ),
    rule(
        r"\bi(?:'m|'ve been| am| have been) (?:really |so |totally |kinda )?into " + EN_OBJ,
        one("user.likes"),
    ),
    rule(r"\bi (?:can't|cannot|can not) (?:eat|drink|have) " + EN_OBJ, one("user.allergy")),
    rule(rf"我(?:对)?(?P<v>[{CJK}A-Za-z]{{1,8}}?)过敏", one("user.allergy")),
    rule(
        r"\bi(?:'m| am|m)? (?:very |really |super |severely )?allergic to " + EN_OBJ,
        one("user.allergy"),
    ),
    rule(
        r"\bi (?:don't|do not|dont|no longer|never) (?:eat|drink|like|love|enjoy) "
        + EN_OBJ
        + r"(?= anymore| any more)",
        one("user.dislikes"),
        change=True,
    ),
    rule(r"\bi no longer (?:eat|drink|like|enjoy) " + EN_OBJ, one("user.dislikes"), change=True),
    rule(
        r"\bi(?:'m| am) (?:a )?(?:vegetarian|vegan) now",
        lambda m: [("user.dislikes", "meat")],
        change=True,
    ),
    rule(
        r"\bi "
        + ADV_EN
        + r"(?:hate|dislike|can't stand|cant stand|don't like|dont like|do not like) "
        + EN_OBJ,
        one("user.dislikes"),
    ),
    rule(
        r"\bi " + ADV_EN + r"(?:love|like|adore|enjoy|am into|'m into) " + EN_OBJ,
        one("user.likes"),
    ),
    # --- plans, events, new things ------------------------------------------------------------
    rule(
        rf"(?P<t>{TIME_CN})我?(?:要|得|准备|打算|会|约了)(?P<e>[{CJK}A-Za-z]{{2,10}})",
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
        rf"\bi(?:'m| am) (?:going to|gonna) (?P<e>[a-z][a-z' ]{{2,30}}?) (?:on |in )?(?P<t>{TIME_EN})\b",
        plan("plan"),
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
        rf"(?:我|^|[,\x00]\s*)(?:答应(?:过)?你(?:的|了)?|保证|发誓)[,\s]*(?P<t>{TIME_CN})(?:一定|会|就)*(?P<e>[{CJK}]{{2,10}})",
        plan("promise"),
        first_person=False,
    ),
    rule(
        rf"(?P<t>{PAST_CN})我(?:去|刚)?(?P<e>[{CJK}]{{1,4}}了[{CJK}]{{1,8}})(?=[,.!~\x00]|$)",
        plan("event"),
    ),
    rule(rf"(?P<t>{PAST_CN})我(?:去)?(?P<e>[{CJK}]{{2,8}}?)了(?=[,.!~\x00]|$)", plan("event")),
    rule(
        rf"(?:我|我们)(?:换了|换了个|换了一个|有了|有个)(?:新的?)(?P<k>{alt(THINGS_CN)})[,\s]*(?:叫|是|姓)\s*"
        + CN_RUN,
        lambda m: [(f"user.{THINGS_CN[m.group('k')]}", m.group("v"))],
        change=True,
    ),
    rule(
        rf"我(?:们)?(?:的)?新(?P<k>{alt(THINGS_CN)})(?:叫|是|姓)\s*" + CN_RUN,
        lambda m: [(f"user.{THINGS_CN[m.group('k')]}", m.group("v"))],
        change=True,
    ),
    rule(
        r"\b(?:my|our) (?P<k>vet|doctor|dentist|therapist|landlord|coach) (?:is|'s) (?P<v>(?-i:(?:Dr\.? |Mr\.? |Ms\.? |Mrs\.? )?[A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}?))"
        + EN_END,
        lambda m: [(f"user.{m.group('k').lower()}", m.group("v"))],
    ),
    rule(
        r"我(?:们)?(?:家)?的?(?P<k>兽医|医生|牙医|心理医生)(?:是|叫|姓)\s*" + CN_RUN,
        lambda m: [(f"user.{THINGS_CN[m.group('k')]}", m.group("v"))],
    ),
    rule(
        rf"\b(?:i|we) (?:got|have|found|switched to) a new (?P<k>{alt(THINGS_EN)})\s*,?\s*(?:called |named )?(?P<v>(?-i:(?:Dr\.? |Mr\.? |Ms\.? |Mrs\.? )?[A-Z][\w'.-]*(?: [A-Z][\w'.-]*){{0,2}}?))"
        + EN_END,
        lambda m: [(f"user.{m.group('k').lower()}", m.group("v"))],
        change=True,
    ),
    rule(
        rf"\b(?:my|our) new (?P<k>{alt(THINGS_EN)}) (?:is|'s) (?P<v>(?:Dr\. |Dr )?[A-Za-z][\w'.-]*(?: [A-Z][\w'.-]*){{0,2}}?)"
        + EN_END,
        lambda m: [(f"user.{m.group('k').lower()}", m.group("v"))],
        change=True,
    ),
)
