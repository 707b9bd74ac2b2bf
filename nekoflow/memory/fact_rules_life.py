# ruff: noqa: E501  (a table of regular expressions: one rule per line reads best)
"""The fact rules about where the user lives and what they like, dislike and are allergic to.

Every pattern runs on NFKC-normalised text with question and wish clauses blanked. Pure: no I/O.
"""

from __future__ import annotations

from nekoflow.memory.fact_patterns import (
    ADV_CN,
    ADV_EN,
    CJK,
    CLAUSE,
    CN_RUN,
    EN_END,
    EN_OBJ,
    EN_WORDS,
    Rule,
    one,
    rule,
)
from nekoflow.memory.fact_vocab import (
    CITIES_CN,
)

_FAVOURITE_OF_VERB = {"吃": "食物", "喝": "饮料", "玩": "游戏", "听": "歌", "看": "剧"}
"""What "最爱吃的/最喜欢听的" is a favourite of."""

LIFE_RULES: tuple[Rule, ...] = (
    # --- places -------------------------------------------------------------------------------
    rule(
        r"我(?:现在|目前|一直|其实|已经|还)?(?:住在|住)(?!院|宿舍|的|了|过|着|一|几|进)" + CN_RUN,
        one("user.home_city"),
    ),
    rule(
        rf"(?:我|我们|我家|^|[,\x00]\s*)(?:已经|刚|上个月|去年|前段时间|最近|终于)?(?:从[{CJK}]{{1,6}}?)?(?:搬到了?|搬去了?|搬来了?|搬家到|搬回了?|移居到?)\s*(?:老家|家乡)?"
        + CN_RUN,
        one("user.home_city"),
        change=True,
    ),
    rule(
        r"(?:^|[,\x00]\s*)(?:现在|目前|一直)?(?:住在|住(?!院|宿舍|的|了|过|着|一|几|进|得|不|下|址|处|房|店|校|嘴|手|口))"
        + CN_RUN,
        one("user.home_city"),
        first_person=False,
    ),
    rule(r"我现在是" + rf"(?P<v>[{CJK}]{{2,6}}?)人", one("user.home_city"), change=True),
    rule(r"我(?:是|算)(?P<v>[\u4e00-\u9fff]{2,6}?)人(?![员气生])", one("user.hometown")),
    rule(r"我(?:的)?老家(?:是|在)?" + CN_RUN, one("user.hometown")),
    rule(rf"{CLAUSE}(?:老家|家乡)(?:是|在)?" + CN_RUN, one("user.hometown"), first_person=False),
    rule(rf"我是(?P<v>{CITIES_CN})(?:的|人|滴)(?=[,\s!~.]|$)", one("user.hometown")),
    rule(
        rf"\b(?:i'm|im|i am) (?:originally )?from\s*(?P<v>{CITIES_CN}|[{CJK}]{{2,4}}?)(?=[,\s!~.]|$)",
        one("user.hometown"),
    ),
    rule(
        r"(?:我|^|[,\x00]\s*)(?:现在|目前)?在\s*(?P<v>(?-i:[A-Z][a-zA-Z]+(?: [A-Z][a-z]+)?))\s*(?:读书|上学|读研|读博|生活|定居)",
        one("user.home_city"),
        first_person=False,
    ),
    rule(
        rf"{CLAUSE}(?P<v>{CITIES_CN})人(?=[,\s!~.]|$|哦|呀|啦)",
        one("user.hometown"),
        first_person=False,
    ),
    rule(
        rf"(?:我|{CLAUSE})(?:现在|目前|最近|一直)?在(?P<v>{CITIES_CN})(?:读研|读博|读书|上学|生活|定居|搬砖)",
        one("user.home_city"),
        first_person=False,
    ),
    rule(
        rf"(?:跳槽到|跳到|入职了?|换到)了?(?P<v>(?:一家)?[{CJK}A-Za-z]{{1,10}}?(?:公司|工作室|银行|医院|学校|工厂|餐厅|酒店|事务所))",
        one("user.workplace"),
        change=True,
        first_person=False,
    ),
    rule(
        rf"(?:{CLAUSE}|\b(?:but|and|now) )(?:i )?(?:currently |now |still )?live in "
        + EN_WORDS
        + EN_END,
        one("user.home_city"),
        first_person=False,
        lang="en",
    ),
    rule(
        r"^\s*(?:just |recently |finally )?(?:moved|relocated) (?:to|back to) " + EN_WORDS + EN_END,
        one("user.home_city"),
        first_person=False,
        change=True,
        lang="en",
    ),
    rule(
        rf"{CLAUSE}(?:(?:i'm|im|i am) )?originally from " + EN_WORDS + EN_END,
        one("user.hometown"),
        first_person=False,
        lang="en",
    ),
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
        r"\b(?<!don't )(?<!dont )(?<!not )(?<!never )(?<!stopped )(?:switched to|go to|going to|started going to|joined|signed up (?:at|for)) (?:a |an |the )?(?P<v>[a-z][\w -]{0,25}?(?:gym|pool|studio|club|dojo|rink|court|fitness|crossfit|yoga))\b",
        one("user.gym"),
    ),
    # --- likes, dislikes, allergies, favourites -----------------------------------------------
    rule(
        rf"我{ADV_CN}(?:最)?喜欢的(?P<k>[{CJK}]{{1,6}}?)(?:是|就是)\s*《?" + CN_RUN,
        lambda m: [(f"user.favourite.{m.group('k')}", m.group("v"))],
    ),
    rule(
        rf"我{ADV_CN}最爱的(?P<k>[{CJK}]{{1,6}}?)(?:是|就是)\s*" + CN_RUN,
        lambda m: [(f"user.favourite.{m.group('k')}", m.group("v"))],
    ),
    rule(
        r"(?:\bmy |^\s*)(?:fav|favou?rite|fave) (?P<k>[a-z]+(?: [a-z]+)?) (?:is|are|'s|=) ['\"“]?(?P<v>[A-Za-z0-9][\w'&.-]*(?: [A-Za-z0-9][\w'&.-]*){0,3}?)"
        + EN_END,
        lambda m: [(f"user.favourite.{m.group('k').lower()}", m.group("v"))],
        first_person=False,
        lang="en",
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
        rf"我{ADV_CN}(?:讨厌|不喜欢|受不了|不爱|不吃|不喝|怕|不能吃|吃不了)(?:吃|喝|看|玩|听)?(?P<v>[{CJK}A-Za-z]{{1,10}})",
        one("user.dislikes"),
    ),
    rule(
        rf"{CLAUSE}(?:也|还)?{ADV_CN}(?:讨厌|不喜欢|受不了|不爱吃|不爱|不能吃|吃不了|不吃)(?:吃|喝|看|玩|听)?(?P<v>[{CJK}A-Za-z]{{1,10}})",
        one("user.dislikes"),
        first_person=False,
    ),
    rule(
        rf"(?:我|{CLAUSE}){ADV_CN}最(?:讨厌|受不了|不喜欢)的(?:[{CJK}]{{1,6}}?)?(?:是|就是)\s*"
        + CN_RUN,
        one("user.dislikes"),
        first_person=False,
    ),
    rule(
        rf"{CLAUSE}(?:平时|最近|一直|周末|没事|有空)?(?:也|还)?{ADV_CN}(?<!不)(?:喜欢|爱)(?!的|你|过|死|这|那|和|跟|上|被|着|就|吗|不)(?:吃|喝|看|玩|听|去)?(?P<v>[{CJK}A-Za-z]{{1,10}})",
        one("user.likes"),
        first_person=False,
    ),
    rule(
        rf"{CLAUSE}(?P<v>[{CJK}]{{1,6}}?)(?:真的|简直|绝对|永远)?(?:yyds|绝绝子|永远的神|yyds!)",
        one("user.likes"),
        first_person=False,
    ),
    rule(
        r"《(?P<v>[^》]{1,20})》(?:是我的?最爱|我超爱|我最爱|yyds)",
        one("user.likes"),
    ),
    rule(
        rf"\bi {ADV_EN}(?P<k>love|like|adore|enjoy|hate|dislike|can't stand|cant stand)\s*(?P<v>[{CJK}]{{1,8}})",
        lambda m: [
            (
                "user.dislikes"
                if m.group("k").lower() in ("hate", "dislike", "can't stand", "cant stand")
                else "user.likes",
                m.group("v"),
            )
        ],
    ),
    rule(
        rf"{CLAUSE}(?:最近)?(?:迷上了?|爱上了?)(?!你|他|她|一个人|了)(?:吃|喝|看|玩|听)?(?P<v>[{CJK}A-Za-z]{{1,10}})",
        one("user.likes"),
        first_person=False,
    ),
    rule(
        rf"{CLAUSE}{ADV_CN}最(?:喜欢|爱)的(?P<k>[{CJK}]{{1,6}}?)(?:是|就是)\s*《?" + CN_RUN,
        lambda m: [(f"user.favourite.{m.group('k')}", m.group("v"))],
        first_person=False,
    ),
    rule(
        rf"(?:我|{CLAUSE}){ADV_CN}最(?:喜欢|爱)(?P<k>吃|喝|玩|听|看)的(?:[{CJK}]{{1,4}}?)?(?:是|就是)\s*"
        + CN_RUN,
        lambda m: [(f"user.favourite.{_FAVOURITE_OF_VERB[m.group('k')]}", m.group("v"))],
        first_person=False,
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
    rule(
        rf"我(?:从小|一直|天生|有点|也|还|就|都)*(?:对)?\s*(?P<v>(?:(?!对)[{CJK}A-Za-z]){{1,12}}?)\s*过敏",
        one("user.allergy"),
    ),
    rule(
        rf"{CLAUSE}(?P<v>(?:(?!对|我)[{CJK}A-Za-z]){{1,4}}?)过敏(?=星人|体质|人士|[,\s!~.]|$)",
        one("user.allergy"),
        first_person=False,
    ),
    rule(
        r"^\s*(?:very |really |super |severely )?allergic to " + EN_OBJ,
        one("user.allergy"),
        first_person=False,
        lang="en",
    ),
    rule(
        rf"{CLAUSE}(?:也|还)?对(?P<v>(?:(?!对)[{CJK}A-Za-z]){{1,8}}?)过敏",
        one("user.allergy"),
        first_person=False,
    ),
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
    rule(
        r"^\s*" + ADV_EN + r"(?:hate|can't stand|cant stand|dislike|despise) " + EN_OBJ,
        one("user.dislikes"),
        first_person=False,
        lang="en",
    ),
    rule(
        r"^\s*" + ADV_EN + r"(?:love|adore) " + EN_OBJ,
        one("user.likes"),
        first_person=False,
        lang="en",
    ),
    rule(
        r"(?:\b(?:i'm|im|i am|i've been|ive been) |^\s*)(?:so |really |totally |kinda |lowkey |lowkey )?(?:obsessed with|addicted to|hooked on|crazy about) "
        + EN_OBJ,
        one("user.likes"),
        first_person=False,
        lang="en",
    ),
)
