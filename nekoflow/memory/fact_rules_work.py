# ruff: noqa: E501  (a table of regular expressions: one rule per line reads best)
"""The fact rules about the user's work: job, workplace, school, major and schedule."""

from __future__ import annotations

from nekoflow.memory.fact_patterns import (
    CJK,
    CLAUSE,
    EN_END,
    I_AM,
    Rule,
    one,
    rule,
)
from nekoflow.memory.fact_vocab import (
    CITIES_CN,
    FIELDS_EN,
    GIGS_CN,
    JOB_CN,
    JOBS_EN,
    SHIFTS_CN,
    SHIFTS_EN,
)

STUDENT_CN = {"研究生": "研究生", "硕士": "研究生", "博士": "博士生", "大学": "大学生",
               "本科": "大学生", "高中": "高中生", "初中": "初中生"}  # fmt: skip


WORK_RULES: tuple[Rule, ...] = (
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
