# ruff: noqa: E501  (word lists and regular expressions: one entry per line reads best)
"""The words the fact rules know: pet species, family relations, jobs, shifts, time
expressions (Chinese and English), mapped to the slot names they give. Pure data."""

from __future__ import annotations

CJK = r"\u4e00-\u9fff"

SPECIES_CN = {
    "猫咪": "cat", "小猫": "cat", "猫": "cat", "狗狗": "dog", "小狗": "dog", "狗": "dog",
    "兔子": "rabbit", "兔兔": "rabbit", "仓鼠": "hamster", "鹦鹉": "parrot", "金鱼": "fish",
    "乌龟": "turtle", "小鸟": "bird", "鸟": "bird", "猫猫": "cat", "橘猫": "cat",
    "狸花猫": "cat", "三花猫": "cat", "三花": "cat", "布偶猫": "cat", "布偶": "cat",
    "英短": "cat", "美短": "cat", "暹罗猫": "cat", "蓝猫": "cat", "金毛": "dog", "柯基": "dog",
    "泰迪": "dog", "哈士奇": "dog", "柴犬": "dog", "萨摩耶": "dog", "边牧": "dog",
    "拉布拉多": "dog", "比熊": "dog", "博美": "dog",
}  # fmt: skip
SPECIES_EN = {
    "cat": "cat", "kitten": "cat", "kitty": "cat", "dog": "dog", "puppy": "dog", "pup": "dog",
    "doggo": "dog", "rabbit": "rabbit", "bunny": "rabbit", "hamster": "hamster",
    "parrot": "parrot", "fish": "fish", "turtle": "turtle", "bird": "bird",
    # breeds name the species ("a beagle named Biscuit")
    "beagle": "dog", "corgi": "dog", "poodle": "dog", "labrador": "dog", "husky": "dog",
    "golden retriever": "dog", "retriever": "dog", "shiba": "dog", "shiba inu": "dog",
    "pug": "dog", "dachshund": "dog", "chihuahua": "dog", "terrier": "dog", "collie": "dog",
    "border collie": "dog", "bulldog": "dog", "schnauzer": "dog", "samoyed": "dog",
    "spaniel": "dog", "pomeranian": "dog", "tabby": "cat", "ragdoll": "cat", "siamese": "cat",
    "maine coon": "cat", "sphynx": "cat",
}  # fmt: skip
RELATION_CN = {
    "妈妈": "mother", "老妈": "mother", "母亲": "mother", "妈": "mother", "爸爸": "father",
    "老爸": "father", "父亲": "father", "爸": "father", "姐姐": "sister", "妹妹": "sister",
    "哥哥": "brother", "弟弟": "brother", "老婆": "wife", "妻子": "wife", "老公": "husband",
    "丈夫": "husband", "儿子": "son", "女儿": "daughter", "女朋友": "girlfriend",
    "女友": "girlfriend", "男朋友": "boyfriend", "男友": "boyfriend", "奶奶": "grandma",
    "外婆": "grandma", "姥姥": "grandma", "爷爷": "grandpa", "外公": "grandpa", "姥爷": "grandpa",
    "室友": "roommate", "闺蜜": "best friend",
}  # fmt: skip
RELATION_EN = {
    "mom": "mother", "mum": "mother", "mother": "mother", "dad": "father", "father": "father",
    "sister": "sister", "sis": "sister", "brother": "brother", "bro": "brother", "wife": "wife",
    "husband": "husband", "son": "son", "daughter": "daughter", "girlfriend": "girlfriend",
    "gf": "girlfriend", "boyfriend": "boyfriend", "bf": "boyfriend", "grandma": "grandma",
    "grandmother": "grandma", "grandpa": "grandpa", "grandfather": "grandpa",
    "roommate": "roommate", "best friend": "best friend", "partner": "partner",
}  # fmt: skip
THINGS_CN = {"兽医": "vet", "医生": "doctor", "牙医": "dentist", "心理医生": "therapist",
              "室友": "roommate", "老板": "boss", "领导": "boss", "手机": "phone", "车": "car"}  # fmt: skip
THINGS_EN = ("vet", "doctor", "dentist", "therapist", "roommate", "boss", "phone", "car",
              "job", "apartment", "school", "manager", "landlord", "coach")  # fmt: skip
JOBS_EN = (
    "software engineer|software developer|web developer|engineer|nurse|teacher|doctor|"
    "student|developer|programmer|designer|graphic designer|writer|lawyer|accountant|chef|"
    "cook|barista|cashier|driver|artist|musician|photographer|vet|veterinarian|pharmacist|"
    "firefighter|police officer|cop|scientist|researcher|manager|waiter|waitress|mechanic|"
    "electrician|librarian|translator|streamer|consultant|analyst|intern|data scientist|"
    "paramedic|dentist|professor|tutor|illustrator|animator|game developer|freelancer|"
    "journalist|editor|architect|carpenter|plumber|baker|pilot|flight attendant|soldier|"
    "farmer|secretary|receptionist|salesperson|sales rep|product manager|project manager"
)
JOB_CN = (
    rf"[{CJK}]{{0,4}}(?:工程师|程序员|设计师|护士|医生|老师|教师|警察|律师|会计|记者|作家|"
    r"厨师|司机|学生|店长|经理|主播|画家|歌手|演员|研究生|大学生|高中生|初中生|公务员|工人|"
    r"护工|保安|快递员|外卖员|骑手|兽医|编辑|翻译|销售|前台|客服|运营|产品经理|策划|博士生|消防员|"
    r"军人|农民|厨子|医护|药剂师|会计师|建筑师|律师助理|程序猿|"
    r"实习生|店员|收银员|咖啡师|美甲师|理发师|插画师|UP主|up主|自由职业者)"
)
SHIFTS_CN = r"大夜班|夜班|早班|晚班|白班|中班|三班倒|两班倒"
SHIFTS_EN = (
    r"night shifts?|the night shift|day shifts?|the day shift|early shifts?|late shifts?|"
    r"evening shifts?|graveyard shifts?|nights|weekends|double shifts"
)
_DAY_CN = r"(?:\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])[号日]"
_MONTH_CN = r"(?:\d{1,2}|十[一二]?|[一二三四五六七八九])月份?"
TIME_CN = (
    r"(?:明天|后天|大后天|今晚|今天晚上|今天下午|今天|这周[一二三四五六日天末]|下周[一二三四五六日天末]?|"
    r"下个?星期[一二三四五六日天]?|下个?礼拜[一二三四五六日天]?|"
    rf"下个月(?:{_DAY_CN}|初|中|底)?|(?:明年|今年)(?:{_MONTH_CN}(?:{_DAY_CN}|初|中|底)?)?|"
    r"周[一二三四五六日末]|星期[一二三四五六日天]|礼拜[一二三四五六日天]|月底|年底|"
    rf"{_MONTH_CN}{_DAY_CN}|{_MONTH_CN}(?:初|中|底)?|{_DAY_CN})(?:上午|下午|晚上|早上|中午|傍晚)?"
)
TIME_EN = (
    r"(?:(?:next|this) )?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"week|weekend|month|year)(?: (?:morning|afternoon|evening|night))?|tomorrow(?: (?:morning|"
    r"afternoon|evening|night))?|tonight|later today|"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]* \d{1,2}(?:st|nd|rd|th)?|"
    # a month alone (not "may": a verb far more often), a season
    r"(?:early |late |mid-?)?(?:january|february|march|april|june|july|august|september|october|"
    r"november|december)|(?:this |next )?(?:spring|summer|autumn|fall|winter)"
)
PAST_CN = (
    r"(?:昨天|前天|上周[一二三四五六日天末]?|上个?星期[一二三四五六日天]?|上个月|去年|刚刚|刚才)"
)
