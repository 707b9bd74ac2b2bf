# ruff: noqa: E501  (a table of regular expressions: one rule per line reads best)
"""The fact rules about the user as a person: identity, pets and family, work, school and schedule.

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
    FIELDS_EN,
    GIGS_CN,
    JOB_CN,
    JOBS_EN,
    RELATION_CN,
    RELATION_EN,
    SHIFTS_CN,
    SHIFTS_EN,
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


STUDENT_CN = {"研究生": "研究生", "硕士": "研究生", "博士": "博士生", "大学": "大学生",
               "本科": "大学生", "高中": "高中生", "初中": "初中生"}  # fmt: skip

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
        rf"\bmy (?P<k>{REL_EN})s (?:a|an) (?:[a-z-]+ )?(?P<v>{JOBS_EN})\b",
        keyed("user.family.", RELATION_EN, ".job"),
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN})(?:s|'s| is) (?:a|an) (?:[a-z-]+ )?(?:{JOBS_EN}) in "
        + EN_WORDS
        + EN_END,
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
        rf"\bmy (?P<k>{REL_EN}) [a-z]+ (?:is|'s) (?:a|an) (?:[a-z-]+ )?(?P<v>{JOBS_EN})\b",
        keyed("user.family.", RELATION_EN, ".job"),
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN}) (?:just |recently )?(?:got a job|started working|works|is working|got hired) as (?:a|an) (?P<v>[a-z][a-z ]{{1,30}}?)(?=\s+(?:at|in|for|and|but|now)\b|\s*[,.!;~\x00]|$)",
        keyed("user.family.", RELATION_EN, ".job"),
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN})(?:(?: is|'s) (?:a|an) (?:[a-z-]+ )?(?:{JOBS_EN})| (?:just |recently )?(?:got a job|started working|works|is working|got hired) as (?:a|an) [a-z][a-z ]{{1,30}}?) in "
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
        rf"\bmy (?P<k>{REL_EN})(?: is|'s) (?:a|an) (?:(?:new|junior|senior|retired|part-time) )?(?P<v>{JOBS_EN})\b",
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
    # --- work, school, schedule ---------------------------------------------------------------
    rule(rf"我(?:现在|目前)?(?:是|当|做)(?:一名|一个|个|名|位)?(?P<v>{JOB_CN})", one("user.job")),
    rule(
        rf"(?:我|^|[,\x00]\s*)(?:现在|目前|最近)?(?:还|也)?在[^,\x00]{{1,14}}?(?:做|当)(?:一名|一个|个|名|位)?(?P<v>{JOB_CN})",
        one("user.job"),
        first_person=False,
    ),
    rule(rf"我(?:的)?(?:工作|职业)是(?P<v>[{CJK}A-Za-z]{{2,8}})", one("user.job")),
    rule(
        rf"{CLAUSE}(?:现在|目前|平时)?(?:是(?:一名|一个|个|名|位)|(?:在)?(?:做|当)(?:一名|一个|个|名|位)?)(?P<v>{JOB_CN})",
        one("user.job"),
        first_person=False,
    ),
    rule(
        rf"我(?:现在|目前)?是(?P<v>(?:开|跑|送|卖|做|搞|教|修|写)[{CJK}A-Za-z]{{1,5}}?)的(?=[,.!~\x00\s]|$)",
        one("user.job"),
    ),
    rule(
        rf"我(?:现在|目前|一直)?(?:在[^,\x00]{{1,8}}?)?(?P<v>{GIGS_CN})(?=[,.!~\x00\s]|$|的|了)",
        one("user.job"),
    ),
    rule(r"我是(?P<v>[A-Za-z]{2,12}) major\b", one("user.major")),
    rule(
        rf"我是(?!老大|老二)(?P<v>[{CJK}]{{1,4}}?(?:大学|学院|大|科|工|师大|交大|理工|财经|政法))的",
        one("user.school"),
    ),
    rule(
        rf"{CLAUSE}学的(?!是)(?P<v>[{CJK}]{{2,6}}?)(?=[,\s!~.]|$)",
        one("user.major"),
        first_person=False,
    ),
    rule(
        r"(?:\bi |^\s*)(?:just |recently )?(?:started (?:a |my )?new job|got (?:a job|hired)) as (?:a|an) (?P<v>[a-z][a-z ]{1,30}?)(?=\s+(?:at|in|for|and|but|now|last|this|yesterday|today)\b|\s*[,.!;~\x00]|$)",
        one("user.job"),
        first_person=False,
        lang="en",
    ),
    rule(
        r"(?:\bi |^\s*)(?:just |finally )?got hired (?:at|by) (?P<v>(?:the )?[A-Za-z][\w'&.-]*(?: [A-Za-z][\w'&.-]*){0,2}?)"
        + EN_END,
        one("user.workplace"),
        first_person=False,
        lang="en",
        change=True,
    ),
    rule(
        rf"\b{I_AM} (?:(?:now|currently|still|just) )?(?:a|an) (?:(?:new|junior|senior|freelance|full-time|part-time|trainee|student|self-employed) )?(?P<v>(?:(?:\d(?:st|nd|rd|th) grade|high school|middle school|elementary school|primary school|kindergarten|math|english|science|music|art|piano|dance|history) )?(?:{JOBS_EN}))\b",
        one("user.job"),
    ),
    rule(rf"\bi (?:do|work in) (?P<v>{FIELDS_EN})\b", one("user.job")),
    rule(
        r"\bi work as (?:a|an) (?P<v>[a-z][a-z ]{1,30}?)(?=\s+(?:at|in|for|and|but|now)\b|\s*[,.!;~\x00]|$)",
        one("user.job"),
    ),
    rule(
        rf"(?:我|^|[,\x00]\s*)(?:现在|目前)?在(?P<v>[{CJK}A-Za-z0-9]{{1,10}}?(?:医院|公司|银行|工厂|集团|事务所))(?=[{CJK}]{{0,4}}?(?:科|部|上班|工作|实习)?(?:[,.!~\x00\s]|$))",
        one("user.workplace"),
        first_person=False,
    ),
    rule(
        rf"(?:我|^|[,\x00]\s*)(?:现在|目前|最近)?(?:还|也)?在(?P<v>一(?:家|个|所)[{CJK}A-Za-z0-9]{{1,14}}?(?:公司|工作室|工厂|医院|学校|银行|餐厅|酒店|店|机构|事务所))",
        one("user.workplace"),
        first_person=False,
    ),
    rule(
        rf"(?:我|^|[,\x00]\s*)(?:现在|目前|最近)?(?:还|也)?在(?P<v>[{CJK}A-Za-z0-9]{{1,12}}?)(?:上班|工作|打工|实习|当|做|上(?:{SHIFTS_CN}))",
        one("user.workplace"),
        first_person=False,
    ),
    rule(
        rf"(?:我|^|[,\x00]\s*)[^,\x00]{{0,8}}?(?:上的是|上|轮|值|又是|都是|还是|每天|天天|在)(?P<v>{SHIFTS_CN})",
        one("user.schedule"),
        first_person=False,
    ),
    rule(rf"我(?:是|们是)?(?P<v>{SHIFTS_CN})", one("user.schedule")),
    rule(
        rf"\bi(?:'m| am)? (?:work(?:ing)?|do|on|doing|pull(?:ing)?) (?:the )?(?P<v>{SHIFTS_EN})\b",
        one("user.schedule"),
    ),
    rule(
        rf"{CLAUSE}(?:(?:i do|doing|working|i work) )?(?P<v>\d{{1,2}}[- ]hour shifts?|9[- ]?to[- ]?5|nine[- ]to[- ]five)\b",
        one("user.schedule"),
        first_person=False,
        lang="en",
    ),
    rule(
        rf"{CLAUSE}(?:每天|天天)?(?P<v>朝九晚五|朝九晚六|朝[七八九十]晚[三四五六七八九]|996|955|007|大小周|单休|双休|早八|晚八)(?=[,\s!~.]|$|的|了|人)",
        one("user.schedule"),
        first_person=False,
    ),
    rule(
        rf"\bmy schedule is (?P<v>{SHIFTS_EN}|[a-z0-9][\w ,-]{{2,25}}?)" + EN_END,
        one("user.schedule"),
    ),
    rule(
        rf"{CLAUSE}(?:i(?:'ve| have) )?been (?:doing|working|on|pulling) (?:the )?(?P<v>{SHIFTS_EN})\b",
        one("user.schedule"),
        lang="en",
        first_person=False,
    ),
    rule(
        r"\bi (?:mostly |usually |always |normally |often )?work (?:from )?(?P<v>\d{1,2}(?::\d\d)? ?(?:am|pm)? ?(?:to|-|till|until) ?\d{1,2}(?::\d\d)? ?(?:am|pm))",
        one("user.schedule"),
    ),
    rule(
        rf"\bi (?:work|do|am on|'m on|work(?:ing)?) (?:{SHIFTS_EN}) at (?P<v>(?:the )?[A-Za-z][\w'&-]*(?: [A-Za-z][\w'&-]*){{0,2}}?)"
        + EN_END,
        one("user.workplace"),
    ),
    rule(
        r"\bi (?:now )?work (?:at|for) (?P<v>(?:the )?[A-Za-z][\w'&.-]*(?: [A-Za-z][\w'&.-]*){0,2}?)"
        + EN_END,
        one("user.workplace"),
    ),
    rule(
        r"\b(?:i'm|i am|im) (?:now )?(?:a|an|the) (?!(?:\w+ )?(?:student|pupil|freshman|sophomore)\b)[a-z][\w -]{1,30}? (?:at|for) (?:a |an |the )?(?:[\w-]+ ){0,3}?(?:called|named) (?P<v>(?-i:[A-Z][\w'&.-]*(?: [A-Z][\w'&.-]*){0,3}))",
        one("user.workplace"),
    ),
    rule(
        r"\b(?:i'm|i am|im) (?:now )?(?:a|an|the) (?!(?:\w+ )?(?:student|pupil|freshman|sophomore)\b)[a-z][\w -]{1,30}? (?:at|for) (?P<v>(?-i:[A-Z][\w'&.-]*(?: [A-Z][\w'&.-]*){0,3}))",
        one("user.workplace"),
    ),
    rule(
        r"(?:\bi |^\s*)(?:just |recently )?started (?:(?:a new |my new )?job |working )?at (?P<v>(?:the )?[A-Za-z][\w'&.-]*(?: [A-Za-z][\w'&.-]*){0,2}?)"
        + EN_END,
        one("user.workplace"),
        change=True,
        lang="en",
    ),
    rule(
        r"\b(?:got|started) a new job at (?P<v>(?:the )?[A-Za-z][\w'&.-]*(?: [A-Za-z][\w'&.-]*){0,2}?)"
        + EN_END,
        one("user.workplace"),
        change=True,
    ),
    rule(
        rf"我(?:现在|目前)?在(?P<v>[{CJK}A-Za-z]{{1,10}}?)(?:读研|读博|读书|上学|念书|读大学|上大学|读高中|上高中|读初中|读|念|上课)",
        one("user.school"),
    ),
    rule(
        r"\b(?:i (?:go to|attend|study at)(?!(?: [\w'&.-]+){0,3}? (?:fitness|gym|yoga|pilates|crossfit|church|bed|sleep|work|therapy)\b)|(?:i'm|im|i am) (?:a student|studying [a-z]+(?: [a-z]+){0,2}?) at) (?P<v>(?:the )?[A-Za-z][\w'&.-]*(?: [A-Za-z][\w'&.-]*){0,3}?)"
        + EN_END,
        one("user.school"),
    ),
    rule(
        r"我(?:现在|目前)?(?:还|正)?在(?:读|念)(?P<v>研究生|硕士|博士|大学|本科|高中|初中)(?!的)",
        lambda m: [("user.job", STUDENT_CN[m.group("v")])],
    ),
    rule(
        rf"(?:我|^|[,\x00]\s*)(?:的|现在|目前)?(?:专业是|主修|学的专业是|学的是|专业(?!是|课|不))(?P<v>[{CJK}A-Za-z]{{2,10}})",
        one("user.major"),
        first_person=False,
    ),
    rule(
        rf"(?:我(?:是)?|{CLAUSE})学(?P<v>(?!的|习|会|了|过|着|校|生|期)[{CJK}A-Za-z]{{2,8}}?)的(?=[,.!~\x00]|$)",
        one("user.major"),
        first_person=False,
    ),
    rule(
        rf"{CLAUSE}(?:现在|目前)?在(?!{CITIES_CN})(?P<v>[{CJK}A-Za-z]{{2,10}}?)(?:读研|读博|读大[一二三四]|读研[一二三]|读高[一二三]|念大[一二三四]|上大[一二三四])",
        one("user.school"),
        first_person=False,
    ),
    rule(
        rf"(?:我|{CLAUSE})(?:是|读的是)?(?P<v>(?!这|那)[{CJK}A-Za-z]{{2,8}}?)专业(?![课的老同])",
        one("user.major"),
        first_person=False,
    ),
    rule(
        rf"(?:{I_AM} |^\s*|\b(?:and|but) )(?:a |an )?(?:\d+ ?(?:y/o|yo|-year-old) )?(?:[a-z]+ )?(?:student|freshman|sophomore|junior|senior|undergrad|phd candidate) at (?P<v>(?:the )?[A-Za-z][\w'&.-]*(?: [A-Za-z][\w'&.-]*){{0,3}}?)"
        + EN_END,
        one("user.school"),
        first_person=False,
        lang="en",
    ),
    rule(
        rf"{CLAUSE}(?:now |currently )?studying [a-z][a-z ]{{1,30}}? at (?P<v>(?:the )?[A-Za-z][\w'&.-]*(?: [A-Za-z][\w'&.-]*){{0,3}}?)"
        + EN_END,
        one("user.school"),
        first_person=False,
        lang="en",
    ),
    rule(
        rf"{CLAUSE}(?:(?:and )?(?:i'm |im )?)majoring in (?P<v>[a-z][a-z ]{{1,30}}?)" + EN_END,
        one("user.major"),
        first_person=False,
        lang="en",
    ),
    rule(
        rf"(?:我|{CLAUSE})(?:是)?毕业于(?P<v>[{CJK}A-Za-z]{{2,12}}?)(?=[,.!~\x00]|$|的)",
        one("user.school"),
        first_person=False,
    ),
    rule(
        rf"我(?:现在|目前)?(?:读|念|上)的(?:学校)?是(?P<v>[{CJK}A-Za-z]{{1,10}}?(?:大学|学院|大|中学|高中|一中|二中|附中|职高|技校|学校))",
        one("user.school"),
    ),
    rule(
        rf"\b(?:{I_AM} (?:majoring|a major) in|my major is|i major in|{I_AM} studying) (?P<v>(?!for|to|at|with|hard|a lot|so|like)[a-z][a-z ]{{1,30}}?)"
        + EN_END,
        one("user.major"),
    ),
    rule(
        rf"{CLAUSE}(?:now |currently )?studying (?P<v>(?!for|to|at|with|hard|a lot|so|like|abroad)[a-z][a-z ]{{1,30}}?)"
        + EN_END,
        one("user.major"),
        lang="en",
        first_person=False,
    ),
)
