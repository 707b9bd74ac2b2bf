# ruff: noqa: E501  (a table of regular expressions: one rule per line reads best)
"""The fact rules about the user as a person: identity, pets and family.

Every pattern runs on NFKC-normalised text with question and wish clauses blanked. Pure: no I/O.
"""

from __future__ import annotations

import re

from nekoflow.memory.fact_patterns import (
    AGE_EN,
    CJK,
    CLAUSE,
    CN_RUN,
    DATE_CN,
    DATE_EN,
    EN_END,
    EN_WORDS,
    I_AM,
    NAME,
    NAME_CN_SHORT,
    NUM_CN,
    REL_CN,
    REL_EN,
    SP_CN,
    SP_EN,
    Rule,
    alt,
    breed,
    keyed,
    one,
    pet,
    rule,
    several,
)
from nekoflow.memory.fact_vocab import (
    BREEDS_CN,
    BREEDS_EN,
    CITIES_CN,
    FESTIVALS_CN,
    GIGS_CN,
    JOB_CN,
    JOBS_EN,
    RELATION_CN,
    RELATION_EN,
    SPECIES_CN,
    SPECIES_EN,
)

_OTHER_EN = {"boss": "user.boss", "manager": "user.boss", "supervisor": "user.boss",
             "roommate": "user.family.roommate.name"}  # fmt: skip
"""Who "my boss Mr. Thompson" names: the people around the user that are not family."""


def _named_other(m: re.Match[str]) -> list[tuple[str, str]]:
    """A name said after who someone is: a relative's, a boss's or a roommate's."""
    who = m.group("k").lower()
    return [(_OTHER_EN.get(who) or f"user.family.{RELATION_EN[who]}.name", m.group("v"))]


PEOPLE_RULES: tuple[Rule, ...] = (
    # --- identity ---------------------------------------------------------------------------
    rule(r"我(?:的)?名字(?:是|叫)\s*" + NAME, one("user.name")),
    rule(r"(?<![你他她它叫])我(?:现在|改名|以后)?叫(?!做)\s*" + NAME, one("user.name")),
    rule(
        r"(?:^|[,\x00]\s*)(?:我)?(?:改名了?[,]?\s*)?现在叫\s*" + NAME,
        one("user.name"),
        change=True,
    ),
    rule(
        r"(?<![他她它别])(?<!不要)(?<!不许)(?<!别再)(?:你|大家|朋友们?|他们|家里人)?(?:都|可以|就|以后)*(?:叫|喊)我\s*"
        + NAME,
        one("user.nickname"),
    ),
    rule(r"我的?(?:小名|昵称|外号|网名)(?:是|叫)\s*" + NAME, one("user.nickname")),
    rule(r"\bmy name(?:'s| is)\s+(?:actually |really |just )?" + NAME, one("user.name")),
    rule(r"\b(?:i|people|everyone) (?:go|goes) by\s+" + NAME + EN_END, one("user.nickname")),
    rule(r"\b(?:you can |u can |just |please |pls ){0,3}call me\s+" + NAME, one("user.nickname")),
    rule(r"\bmy nickname(?:'s| is)\s+" + NAME, one("user.nickname")),
    rule(
        r"\b(?:everyone|everybody|people|my friends|friends|they all|all my friends) (?:calls?|call) me\s+"
        + NAME
        + EN_END,
        one("user.nickname"),
        first_person=False,
    ),
    rule(r"\b(?:i'm|i am|im)\s+(?:called|named)\s+" + NAME, one("user.name")),
    rule(
        r"(?:你好|您好|大家好|哈喽|哈啰|嗨|hello|hi|hey|初次见面|自我介绍一下)[呀啊哇哦~!,.\s]*我是\s*(?!新|一|个|这|那|你|他|她)"
        + NAME
        + r"(?=\s*(?:[,!.~\x00]|$|请多|很高兴|多多))",
        one("user.name"),
    ),
    rule(
        r"我(?:是|叫)?\s*"
        + NAME
        + r"(?=\s*[,!.~]?\s*(?:请多|多多指教|多多关照|初来乍到|新人报到))",
        one("user.name"),
        first_person=False,
    ),
    rule(
        r"我是\s*(?P<v>(?-i:[A-Z][a-z]{1,15}))(?=\s*(?:[,!.~\x00]|$|[^\x00-\x7f]))",
        one("user.name"),
    ),
    rule(
        r"\b(?:hi|hey|hello|yo|sup|hiya|heya)\b[\s,!.~]*(?:(?:everyone|all|guys|there)\b[\s,!.~]*)?(?:i'm|i am|im|this is)\s+"
        + NAME
        + EN_END,
        one("user.name"),
    ),
    rule(
        rf"我(?:今年|已经|都|才|马上|快)?(?P<v>{NUM_CN}|[一二三四五六七八九]十有[一二三四五六七八九])(?:周)?岁",
        one("user.age"),
    ),
    rule(
        r"我(?:今年|都|已经)(?:都|已经)?(?P<v>[一二三四五六七八]十[一二三四五六七八九]?|[1-9]\d)(?=了|[,!.~\s\x00]|$)",
        one("user.age"),
    ),
    rule(
        rf"{CLAUSE}今年(?P<v>[一二三四五六七八]十有[一二三四五六七八九])",
        one("user.age"),
        first_person=False,
    ),
    rule(
        rf"\b{I_AM}\s+(?P<v>{AGE_EN})(?:\s*(?:years?|yrs?) old|{EN_END})",
        one("user.age"),
    ),
    rule(r"我是(?P<v>[0-9]0后|[0-9]{2}后)(?![面来])", one("user.age")),
    rule(rf"{CLAUSE}(?P<v>[0-9]0后)(?=[,\s!~.]|$)", one("user.age"), first_person=False),
    rule(
        rf"{CLAUSE}今年(?:刚满|刚|已经|都|才)?(?P<v>{NUM_CN})(?:周)?岁",
        one("user.age"),
        first_person=False,
    ),
    rule(
        rf"我(?:今年|已经|都|才)?(?:刚满|满了|满)(?P<v>{NUM_CN})(?:周?岁|(?=了|[,!.~\s\x00]|$))",
        one("user.age"),
    ),
    rule(
        r"(?:\bmy |^\s*)name(?:'s| is)\s+(?:actually |really |just )?" + NAME,
        one("user.name"),
        first_person=False,
        lang="en",
    ),
    rule(
        rf"\b{I_AM} (?:a |an )?(?P<v>\d{{1,2}}) ?(?:y/o|yo|-year-old|year old|years old)\b",
        one("user.age"),
    ),
    rule(
        rf"\b{I_AM} [A-Za-z]+,\s*(?P<v>\d{{1,2}})(?=\s*(?:,|$|\.|!|\x00|and\b))",
        one("user.age"),
    ),
    rule(
        rf"\b{I_AM} [A-Za-z]+,\s*(?:\d{{1,2}},\s*)?from " + EN_WORDS + EN_END,
        one("user.hometown"),
    ),
    rule(r"\bi (?:just )?turned (?P<v>\d{1,2})\b", one("user.age"), change=True),
    rule(rf"我(?:的)?生日(?:是|在)?\s*(?P<v>{DATE_CN}|{FESTIVALS_CN})", one("user.birthday")),
    rule(rf"我(?:是)?(?P<v>{DATE_CN})(?:过|的)?生日", one("user.birthday")),
    rule(
        rf"(?:\bmy |^\s*)(?:birthday|bday|b-day|birth day)(?:'s| is)\s+(?:on\s+)?(?:[a-z]+ [a-z]+ \()?(?P<v>{DATE_EN})",
        one("user.birthday"),
        lang="en",
    ),
    rule(
        r"\bi was born on\s+(?P<v>(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?|\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*)",
        one("user.birthday"),
    ),
    # --- pets and family --------------------------------------------------------------------
    rule(
        rf"我(?:家|的|家的|们家|们家的|养的)?(?:那只|这只|那条|这条|小)?(?P<k>{SP_CN})(?:是(?:一)?(?:只|条)?[{CJK}]{{1,5}}?[,\s]+)?(?:的名字|现在|改名)?(?:叫|是)\s*"
        + NAME,
        pet(SPECIES_CN),
    ),
    rule(
        rf"(?:我|{CLAUSE})家里?(?:有|养了)(?:一)?(?:只|条)(?P<k>{SP_CN})(?:叫|名叫)\s*" + NAME,
        pet(SPECIES_CN),
        first_person=False,
    ),
    rule(
        rf"(?:我|{CLAUSE})家里?(?:有|养了)(?:一)?(?:只|条)(?P<k>{alt(BREEDS_CN)})",
        breed(BREEDS_CN),
        first_person=False,
    ),
    rule(
        rf"我(?:家|的)(?:的)?(?P<k>{SP_CN})(?P<v>(?P<r>[{CJK}])(?P=r)|小[{CJK}])(?=在|又|正|今天|每天|天天|总|一直|突然|居然|刚|也|[,\s]|$)",
        pet(SPECIES_CN),
    ),
    rule(
        rf"{CLAUSE}(?:那只|这只|那条|这条)?(?P<k>{SP_CN})(?:的名字)?(?:叫|名叫)\s*" + NAME,
        pet(SPECIES_CN),
        first_person=False,
    ),
    rule(
        rf"(?P<k>{SP_CN})[^.!?\x00]{{0,20}}?给(?:它|他|她)(?:起|取)(?:了个?)?名(?:字)?(?:叫|为)?\s*"
        + NAME,
        pet(SPECIES_CN),
    ),
    rule(
        rf"{CLAUSE}(?:它|他|她)?是(?:一)?(?:只|条)(?P<k>{alt(BREEDS_CN)})",
        breed(BREEDS_CN),
        first_person=False,
    ),
    rule(
        rf"(?:我|\b(?:i|we) )(?:家)?(?:养了|有|have|got)\s*(?:两|三|几|好几|two|three)\s*(?:只|条|个)?(?P<k>{SP_CN}|{SP_EN})s?(?P<rest>[^.!?\x00]{{0,40}})",
        several({**SPECIES_CN, **SPECIES_EN}),
    ),
    rule(
        rf"我(?:家)?(?:养了|有|新养了|捡了|领养了)(?:一|两|三)?(?:只|条|个)?(?P<k>{SP_CN})[,\s]*(?:它|她|他)?(?:的名字)?(?:叫|名叫|叫做)\s*"
        + NAME,
        keyed("user.pet.", SPECIES_CN),
    ),
    rule(
        rf"\b(?:my|our) (?:new )?(?P<k>{SP_EN})(?:'s name is|s name is|'s called| is called| is named|'s named| named| called)\s+"
        + NAME,
        keyed("user.pet.", SPECIES_EN),
    ),
    rule(
        rf"\b(?:my|our) (?P<k>{SP_EN})\s*(?:叫|的名字是|名叫)\s*" + NAME,
        keyed("user.pet.", SPECIES_EN),
    ),
    rule(
        rf"\b(?:(?:i|we) |also |and |just )?(?:have|got|adopted|own|just got|just adopted) (?:a|an|one|two) (?:(?:new|little|cute|black|white|orange|fat|tiny|old|{SP_EN}) )*(?P<k>{SP_EN})\s*,?\s*(?:called|named|whose name is|her name is|his name is)\s+"
        + NAME,
        keyed("user.pet.", SPECIES_EN),
    ),
    rule(
        rf"我(?:家|的|家的|养的|们家)(?:那只|这只|那条|这条|的|小)?(?:(?:{SP_CN})(?:是(?:一)?(?:只|条)?))?(?P<k>{alt(BREEDS_CN)})",
        breed(BREEDS_CN),
    ),
    rule(
        rf"(?:\b(?:i|we) (?:have|got|adopted|own|just got|just adopted)|^\s*(?:just )?(?:got|adopted)|\b(?:also|and) (?:just )?(?:got|adopted)) (?:a|an|one) (?:(?:new|little|cute|black|white|orange|fat|tiny|old|baby) )*(?P<k>{alt(BREEDS_EN)})\b",
        breed(BREEDS_EN),
        lang="en",
    ),
    rule(
        rf"\b(?:my|our) (?:{SP_EN})s?\b[^.!?\x00]{{0,24}}?(?: is|'s|\b(?:he|she)s) (?:a|an) (?:\d+ ?(?:yo|y/o|-?years?[- ]old|-?months?[- ]old) )?(?P<k>{alt(BREEDS_EN)})\b",
        breed(BREEDS_EN),
    ),
    rule(
        rf"\b(?:my|our) (?P<k>{SP_EN}) (?!(?:really|also|just|still|actually|seriously|literally|honestly|truly|definitely|probably|always|never|is|was|can|food|toy|toys|bed|tree|litter|hair|fur|vet|walker|sitter|door|bowl|treats|and|has|had|got|kinda|sorta|even|then|now|today|yesterday)\b)(?P<v>[a-z]{{2,15}}) (?:is (?:a|an|\d)|can|just|loves|keeps|was (?:a|an)|knocked|knocks|ate|bit|sat|sits|sleeps|stole|threw|woke|[a-z]{{3,}}ed)\b",
        keyed("user.pet.", SPECIES_EN),
    ),
    rule(
        rf"我(?:的)?(?P<k>{REL_CN})(?:的名字)?(?:叫|名叫|名字是)\s*" + NAME,
        keyed("user.family.", RELATION_CN),
    ),
    rule(
        rf"我(?:的)?(?P<k>{REL_CN})(?:现在|目前|以前|之前|原来|退休前)?(?:是|当|做)(?:一名|一个|个|名|位)?(?P<v>{JOB_CN})",
        keyed("user.family.", RELATION_CN, ".job"),
    ),
    rule(
        rf"我(?:的)?(?P<k>{REL_CN})(?:现在|目前|以前|之前|原来|退休前)?在[^,\x00]{{1,12}}?(?:当|做)(?:一名|一个|个|名|位)?(?P<v>{JOB_CN})",
        keyed("user.family.", RELATION_CN, ".job"),
    ),
    rule(
        rf"我(?:的)?(?P<k>{REL_CN})(?:现在|目前|以前|之前|原来)?是(?P<v>(?:开|跑|送|卖|做|搞|教|修|写)[{CJK}A-Za-z]{{1,5}}?)的(?=[,.!~\x00]|$)",
        keyed("user.family.", RELATION_CN, ".job"),
    ),
    rule(
        rf"^[\s\x00]*我(?:的)?(?P<k>{REL_CN})[^.!?\x00]{{0,24}}?[,\s]\s*(?:她|他)?(?:现在|目前|也|人)?(?:在[^,\x00]{{1,8}}?)?(?:是|当|做)(?:一名|一个|个|名|位)?(?P<v>{JOB_CN})",
        keyed("user.family.", RELATION_CN, ".job"),
    ),
    rule(
        rf"^[\s\x00]*我(?:的)?(?P<k>{REL_CN})[^.!?\x00]{{0,24}}?[,\s]\s*(?:她|他)?(?:现在|目前|也|人)?在(?P<v>{CITIES_CN})",
        keyed("user.family.", RELATION_CN, ".home_city"),
    ),
    rule(
        rf"我(?:的)?(?P<k>{REL_CN})(?:现在|目前|一直|都|还)?在(?:老家)?(?P<v>{CITIES_CN})(?=工作|上班|打工|上学|读书|生活|定居|住|发展|当|做|开|跑|送|卖|教|修|那边|这边|[,.!~\x00]|$)",
        keyed("user.family.", RELATION_CN, ".home_city"),
    ),
    rule(rf"在老家(?P<v>{CITIES_CN})", one("user.hometown")),
    rule(
        rf"我(?:的)?(?P<k>{REL_CN})(?:现在|以前|一直)?(?:在[^,\x00]{{1,8}}?)?(?P<v>{GIGS_CN})",
        keyed("user.family.", RELATION_CN, ".job"),
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN})\s*(?:是|当|做)(?:一名|一个|个|名|位)?(?P<v>{JOB_CN})",
        keyed("user.family.", RELATION_EN, ".job"),
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN})[^.!?\x00]{{0,20}}?在(?P<v>{CITIES_CN})",
        keyed("user.family.", RELATION_EN, ".home_city"),
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN}|boss|manager|supervisor) (?!(?:really|also|just|still|actually|never|always|often|sometimes|usually|finally|recently|seriously|literally|honestly|is|was|and|who|got|had|has|can|said|says|told|and|or|but|kinda|sorta|totally|definitely|probably|apparently|basically|even|then|now|today|yesterday|ate|came|went)\b)(?P<v>[a-z]{{2,15}}) (?:is|was|just|never|always|can|has|keeps|loves|started|got|works|lives|said|says|told|ate|[a-z]{{3,}}ed)\b",
        _named_other,
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN}|boss|manager|supervisor) (?P<v>(?:(?:mr|mrs|ms|dr)\.? ?)?(?-i:[A-Z][a-z]+))\b(?!(?-i: [A-Z]))",
        _named_other,
    ),
    rule(
        rf"我(?:们|的)?(?:老板|领导|组长|经理|主管|上司)(?P<v>{NAME_CN_SHORT})",
        one("user.boss"),
    ),
    rule(r"我(?:们|的)?\s*boss\s*(?:叫|是)\s*" + NAME, one("user.boss")),
    rule(
        rf"我(?:的)?(?:室友|舍友)(?P<v>{NAME_CN_SHORT})",
        lambda m: [("user.family.roommate.name", m.group("v"))],
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN})\b[^.!?\x00]{{0,40}}?(?:\band |,\s*|\. )(?:he|she)(?:'s| is) (?:a|an) (?:[a-z-]+ )?(?P<v>{JOBS_EN})\b",
        keyed("user.family.", RELATION_EN, ".job"),
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN})\b[^.!?\x00]{{0,40}}?(?:\band |,\s*)(?:he|she)(?:'s| is) (?:a|an) [a-z -]{{2,30}}? in "
        + EN_WORDS
        + EN_END,
        keyed("user.family.", RELATION_EN, ".home_city"),
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN}) (?:just |recently )?(?:got a job|started working|works|is working|got hired) as (?:a|an) (?P<v>[a-z][a-z ]{{1,30}}?)(?=\s+(?:at|in|for|and|but|now)\b|\s*[,.!;~\x00]|$)",
        keyed("user.family.", RELATION_EN, ".job"),
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN})(?:(?: is|'s|s) (?:a|an) (?:[a-z-]+ )?(?:{JOBS_EN})| (?:just |recently )?(?:got a job|started working|works|is working|got hired) as (?:a|an) [a-z][a-z ]{{1,30}}?) in "
        + EN_WORDS
        + EN_END,
        keyed("user.family.", RELATION_EN, ".home_city"),
    ),
    rule(
        rf"我(?:的)?(?P<k>{REL_CN})(?:现在|目前|一直)?(?:住在|住)(?!院|宿舍|的|了|过|着|一|几|进)"
        + CN_RUN,
        keyed("user.family.", RELATION_CN, ".home_city"),
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN})(?: [a-z]+)?(?: is|'s|s) (?:a|an) (?:[a-z-]+ )?(?P<v>{JOBS_EN})\b",
        keyed("user.family.", RELATION_EN, ".job"),
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN}) (?:now |still )?works as (?:a|an) (?P<v>[a-z][a-z ]{{1,30}}?)(?=\s+(?:at|in|for|and|but|now)\b|\s*[,.!;~\x00]|$)",
        keyed("user.family.", RELATION_EN, ".job"),
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN}) (?:now |currently |still )?lives in " + EN_WORDS + EN_END,
        keyed("user.family.", RELATION_EN, ".home_city"),
    ),
    rule(
        rf"我(?:的)?(?P<k>{REL_CN})的生日(?:是|在)?\s*(?P<v>{DATE_CN})",
        keyed("user.family.", RELATION_CN, ".birthday"),
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN})'s birthday(?:'s| is)\s+(?:on\s+)?(?P<v>{DATE_EN})",
        keyed("user.family.", RELATION_EN, ".birthday"),
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN})(?:'s name is|'s called| is called| is named|'s named| named)\s+"
        + NAME,
        keyed("user.family.", RELATION_EN),
    ),
)
