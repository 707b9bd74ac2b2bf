# ruff: noqa: E501  (a table of regular expressions: one rule per line reads best)
"""The fact rules about the user as a person: identity, pets and family, work, school and schedule.

Every pattern runs on NFKC-normalised text with question and wish clauses blanked. Pure: no I/O.
"""

from __future__ import annotations

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
    rule,
)
from nekoflow.memory.fact_vocab import (
    BREEDS_CN,
    BREEDS_EN,
    CITIES_CN,
    FIELDS_EN,
    JOB_CN,
    JOBS_EN,
    RELATION_CN,
    RELATION_EN,
    SHIFTS_CN,
    SHIFTS_EN,
    SPECIES_CN,
    SPECIES_EN,
)

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
        r"(?<![他她它])(?:你|大家|朋友们?|他们|家里人)?(?:都|可以|就|以后)*(?:叫|喊)我\s*" + NAME,
        one("user.nickname"),
    ),
    rule(r"我的?(?:小名|昵称|外号|网名)(?:是|叫)\s*" + NAME, one("user.nickname")),
    rule(r"\bmy name(?:'s| is)\s+" + NAME, one("user.name")),
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
        r"我(?:今年|都|已经)(?:都|已经)?(?P<v>[一二三四五六七八]十[一二三四五六七八九]?|[1-9]\d)了",
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
    rule(r"\bi (?:just )?turned (?P<v>\d{1,2})\b", one("user.age"), change=True),
    rule(rf"我(?:的)?生日(?:是|在)?\s*(?P<v>{DATE_CN})", one("user.birthday")),
    rule(rf"我(?:是)?(?P<v>{DATE_CN})(?:过|的)?生日", one("user.birthday")),
    rule(
        rf"\bmy (?:birthday|bday|b-day|birth day)(?:'s| is)\s+(?:on\s+)?(?P<v>{DATE_EN})",
        one("user.birthday"),
    ),
    rule(
        r"\bi was born on\s+(?P<v>(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?|\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*)",
        one("user.birthday"),
    ),
    # --- pets and family --------------------------------------------------------------------
    rule(
        rf"我(?:家|的|家的|们家|们家的|养的)?(?:那只|这只|那条|这条|小)?(?P<k>{SP_CN})(?:是(?:一)?(?:只|条)[{CJK}]{{1,5}}?[,\s]+)?(?:的名字|现在|改名)?(?:叫|是)\s*"
        + NAME,
        keyed("user.pet.", SPECIES_CN),
    ),
    rule(
        rf"我(?:家)?(?:养了|有|新养了|捡了|领养了)(?:一|两|三)?(?:只|条|个)?(?P<k>{SP_CN})[,\s]*(?:它|她|他)?(?:的名字)?(?:叫|名叫|叫做)\s*"
        + NAME,
        keyed("user.pet.", SPECIES_CN),
    ),
    rule(
        rf"\b(?:my|our) (?:new )?(?P<k>{SP_EN})(?:'s name is|'s called| is called| is named|'s named| named| called)\s+"
        + NAME,
        keyed("user.pet.", SPECIES_EN),
    ),
    rule(
        rf"\b(?:my|our) (?P<k>{SP_EN})\s*(?:叫|的名字是|名叫)\s*" + NAME,
        keyed("user.pet.", SPECIES_EN),
    ),
    rule(
        rf"\b(?:i|we) (?:have|got|adopted|own|just got|just adopted) (?:a|an|one|two) (?:(?:new|little|cute|black|white|orange|fat|tiny|old|{SP_EN}) )*(?P<k>{SP_EN})\s*,?\s*(?:called|named|whose name is|her name is|his name is)\s+"
        + NAME,
        keyed("user.pet.", SPECIES_EN),
    ),
    rule(
        rf"我(?:家|的|家的|养的|们家)(?:那只|这只|那条|这条|的|小)?(?:(?:{SP_CN})(?:是(?:一)?(?:只|条)?))?(?P<k>{alt(BREEDS_CN)})",
        breed(BREEDS_CN),
    ),
    rule(
        rf"(?:\b(?:i|we) (?:have|got|adopted|own|just got|just adopted)|^\s*(?:just )?(?:got|adopted)) (?:a|an|one) (?:(?:new|little|cute|black|white|orange|fat|tiny|old|baby) )*(?P<k>{alt(BREEDS_EN)})\b",
        breed(BREEDS_EN),
        lang="en",
    ),
    rule(
        rf"\b(?:my|our) (?:{SP_EN})\b[^.!?\x00]{{0,20}}?(?: is|'s) (?:a|an) (?:\d+ ?(?:yo|y/o|-?years?[- ]old|-?months?[- ]old) )?(?P<k>{alt(BREEDS_EN)})\b",
        breed(BREEDS_EN),
    ),
    rule(
        rf"\b(?:my|our) (?P<k>{SP_EN}) (?!(?:really|also|just|still|actually|seriously|literally|honestly|truly|definitely|probably|always|never|is|was|can|food|toy|toys|bed|tree|litter|hair|fur|vet|walker|sitter|door|bowl|treats|and|has|had|got)\b)(?P<v>[a-z]{{2,15}}) (?:is (?:a|an|\d)|can|just|loves|keeps|was (?:a|an))\b",
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
        rf"我(?:的)?(?P<k>{REL_CN})(?:的名字)?(?:叫|名叫)[^,\x00]{{1,6}},\s*(?:现在|目前)?(?:是|当|做)(?:一名|一个|个|名|位)?(?P<v>{JOB_CN})",
        keyed("user.family.", RELATION_CN, ".job"),
    ),
    rule(
        rf"我(?:的)?(?P<k>{REL_CN})(?:现在|目前|一直|都|还)?在(?:老家)?(?P<v>{CITIES_CN})(?=工作|上班|打工|上学|读书|生活|定居|住|发展|[,.!~\x00]|$)",
        keyed("user.family.", RELATION_CN, ".home_city"),
    ),
    rule(rf"在老家(?P<v>{CITIES_CN})", one("user.hometown")),
    rule(
        rf"\bmy (?P<k>{REL_EN}) (?!(?:really|also|just|still|actually|never|always|often|sometimes|usually|finally|recently|seriously|literally|honestly|is|was|and|who|got|had|has|can|said|says|told|and|or|but)\b)(?P<v>[a-z]{{2,15}}) (?:is|was|just|never|always|can|has|keeps|loves|started|got|works|lives|said|says|told)\b",
        keyed("user.family.", RELATION_EN),
    ),
    rule(
        rf"\bmy (?P<k>{REL_EN})\b[^.!?\x00]{{0,40}}?(?:\band |,\s*)(?:he|she)(?:'s| is) (?:a|an) (?:[a-z-]+ )?(?P<v>{JOBS_EN})\b",
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
        rf"我(?:现在|目前)?是(?P<v>(?:开|跑|送|卖|做|搞|教|修|写)[{CJK}A-Za-z]{{1,5}}?)的(?=[,.!~\x00]|$)",
        one("user.job"),
    ),
    rule(
        rf"\b{I_AM} (?:(?:now|currently|still|just) )?(?:a|an) (?:(?:new|junior|senior|freelance|full-time|part-time|trainee|student|self-employed) )?(?P<v>{JOBS_EN})\b",
        one("user.job"),
    ),
    rule(rf"\bi (?:do|work in) (?P<v>{FIELDS_EN})\b", one("user.job")),
    rule(
        r"\bi work as (?:a|an) (?P<v>[a-z][a-z ]{1,30}?)(?=\s+(?:at|in|for|and|but|now)\b|\s*[,.!;~\x00]|$)",
        one("user.job"),
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
        rf"(?:我|^|[,\x00]\s*)[^,\x00]{{0,8}}?(?:上|轮|值|又是|都是|还是)(?P<v>{SHIFTS_CN})",
        one("user.schedule"),
        first_person=False,
    ),
    rule(rf"我(?:是|们是)?(?P<v>{SHIFTS_CN})", one("user.schedule")),
    rule(
        rf"\bi(?:'m| am)? (?:work(?:ing)?|do|on|doing|pull(?:ing)?) (?:the )?(?P<v>{SHIFTS_EN})\b",
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
        r"\b(?:i (?:go to|attend|study at)|(?:i'm|im|i am) (?:a student|studying [a-z]+(?: [a-z]+){0,2}?) at) (?P<v>(?:the )?[A-Za-z][\w'&.-]*(?: [A-Za-z][\w'&.-]*){0,3}?)"
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
