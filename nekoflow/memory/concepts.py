"""Everyday concepts across Chinese and English, so a question meets what was said in other words.

A user asks "where do I work these days?" about "now I'm a QA lead at a game studio", "我姐姐和
我弟弟都在哪?" about "my little brother … in Leeds", "which insects scare me?" about "我特别怕
蛾子". Both a retrieval unit's index terms and a query gain one token per concept their words name
(``zcwork``, ``zcsibling`` …) — key expansion as in LongMemEval, with a small bilingual thesaurus
of the topics people tell a companion about themselves instead of a model. The tokens are plain
terms: BM25 weighs them by their rarity like any word, so a concept every line names counts for
little. Pure: no I/O.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["CONCEPTS", "OTHER_TOKENS", "concept_terms"]

#: concept → (English words, matched whole; Chinese words, matched as substrings).
CONCEPTS: dict[str, tuple[str, str]] = {
    "work": (
        "work works worked working job jobs career company office studio employer boss "
        "coworker coworkers colleague colleagues shift shifts workplace",
        "工作 上班 公司 单位 职业 同事 老板 组长 领导 上司 加班 辞职 跳槽 班次 夜班",
    ),
    "home": (
        "live lives lived living home house apartment flat moved move moving neighborhood "
        "neighbourhood rent",
        "住在 住的 住哪 居住 搬家 搬到 搬去 房子 公寓 租房 房租 小区",
    ),
    "place": (
        "where place places location located address",
        "地方 哪里 哪儿 在哪 地址 地点",
    ),
    "hometown": (
        "hometown grew raised born native",
        "老家 家乡 长大 出生 故乡",
    ),
    "exercise": (
        "exercise exercising workout gym swim swimming pool climb climbing run running ran jog "
        "jogging yoga sport sports fitness training 5k 10k marathon race",
        "运动 健身 锻炼 游泳 攀岩 跑步 瑜伽 体育 球馆",
    ),
    "birthday": ("birthday birthdays bday", "生日"),
    "anniversary": ("anniversary anniversaries", "纪念日"),
    "mother": ("mom mum mother mommy mama", "妈 母亲"),
    "father": ("dad father daddy papa", "爸 父亲"),
    "sibling": (
        "sister sisters brother brothers sibling siblings sis bro",
        "姐姐 妹妹 哥哥 弟弟 姐妹 兄弟 老姐 老弟",
    ),
    "partner": (
        "partner boyfriend girlfriend husband wife spouse fiance fiancee significant",
        "男朋友 女朋友 对象 老公 老婆 伴侣 爱人 男友 女友",
    ),
    "grandparent": ("grandma grandpa grandmother grandfather granny", "外婆 外公 奶奶 爷爷 姥姥"),
    "relative": (
        "cousin cousins uncle aunt auntie niece nephew parents folks roommate",
        "表亲 表姐 表妹 表哥 表弟 堂哥 堂姐 叔舅 姑姨 舅舅 叔叔 姑姑 姨妈 侄子 侄女 父母 爸妈 室友",
    ),
    "cat": ("cat cats kitten kitty", "猫 喵"),
    "dog": ("dog dogs puppy pup doggo", "狗"),
    "pet": ("pet pets", "宠物 主子"),
    "food": (
        "food eat eats eating ate dish dishes meal cuisine cook cooking",
        "吃 菜 美食 食物 饭",
    ),
    "drink": ("drink drinks drinking coffee tea latte juice beverage", "喝 咖啡 茶 饮料 奶茶"),
    "like": (
        "love loves loved like likes favourite favorite fave obsessed hooked enjoy enjoys",
        "喜欢 最爱 爱吃 爱喝 爱看 迷上 着迷 上头",
    ),
    "dislike": (
        "hate hates dislike dislikes stand disgusting",
        "讨厌 受不了 不喜欢 不爱 烦死",
    ),
    "fear": ("afraid scared scare scares fear fears terrified phobia", "怕 恐惧 吓"),
    "allergy": ("allergic allergy allergies", "过敏"),
    "trip": (
        "trip trips travel travelling traveling vacation holiday holidays visit visited tour",
        "旅游 旅行 出去玩 去玩 度假 出游 玩",
    ),
    "school": (
        "school college university uni major studied study class degree",
        "大学 学校 专业 读书 上学 毕业 读的",
    ),
    "name": ("name names named called call nickname", "名字 叫什么 叫啥 外号 昵称 小名"),
    "age": ("age old years birthday", "岁 多大 年纪 年龄"),
    "exam": ("exam exams test tests jlpt ielts toefl", "考试 考证 备考"),
    "doctor": (
        "doctor doctors vet vets dentist clinic hospital nurse therapist",
        "医生 兽医 牙医 医院 诊所 看病",
    ),
    "illness": (
        "sick ill illness hospital hospitalized flu fever surgery",
        "生病 住院 发烧 感冒 病了 手术 肠胃炎",
    ),
    "car": ("car cars drive drives driving honda toyota", "车 开车 倒车"),
    "phone": ("phone phones cellphone mobile", "手机"),
    "broken": (
        "broke broken break breaks cracked smashed dead ruined lost",
        "坏 摔 碎 裂 开不了机 进水 掉进 丢了 弄丢",
    ),
    "music": (
        "music song songs band bands singer concert concerts pianist piano jazz album live",
        "音乐 歌 乐队 歌手 演唱会 钢琴",
    ),
    "book": ("book books read reading novel novels", "书 小说 看书 读书"),
    "game": ("game games gaming play playing", "游戏 玩"),
    "weather": ("weather rain rainy sunny snow humid", "天气 下雨 梅雨 晴天 下雪"),
    "insect": ("insect insects bug bugs moth moths spider spiders cockroach", "虫 蛾 蜘蛛 蟑螂"),
    "plan": (
        "plan plans planning going thinking will intend hope",
        "打算 计划 准备 想要 要去 以后",
    ),
    "promise": ("promise promised promises swear", "答应 保证 说好 承诺 约定"),
    "language": ("language languages speak speaks dialect", "语言 方言 语"),
    "plant": ("plant plants flower flowers", "植物 盆栽 养了一盆"),
    "money": ("money salary bonus rent paid pay", "工资 年终奖 房租 赔了"),
    "shop": ("shop store cafe bakery bookstore", "店 咖啡馆 书店"),
    "wedding": ("wedding married marry", "婚礼 结婚 婚"),
}

_EN_WORDS: dict[str, list[str]] = {}
_CN_WORDS: list[tuple[str, str]] = []
for _concept, (_en, _cn) in CONCEPTS.items():
    for _w in _en.split():
        _EN_WORDS.setdefault(_w, []).append(_concept)
    _CN_WORDS.extend((_w, _concept) for _w in _cn.split())
_EN_TOKEN = re.compile(r"[a-z0-9]+")
_CN_ANY = re.compile("|".join(sorted((re.escape(w) for w, _ in _CN_WORDS), key=len, reverse=True)))
_CN_OF = {}
for _w, _c in _CN_WORDS:
    _CN_OF.setdefault(_w, []).append(_c)
_HAN = re.compile(r"[\u4e00-\u9fff]")
_OTHERS = frozenset(
    {"mother", "father", "sibling", "partner", "grandparent", "relative", "cat", "dog", "pet"}
)
"""The concepts that name someone (or some pet) other than the user."""
OTHER_TOKENS = frozenset(f"zc{c}" for c in _OTHERS)
"""Their tokens: a memory about a sister or a cat, not about the user."""


def concept_terms(text: str) -> list[str]:
    """The concept tokens ``text`` names, each once, in a stable order (``zc`` + the concept)."""
    if not text:
        return []
    norm = unicodedata.normalize("NFKC", text).lower()
    found: dict[str, None] = {}
    for word in _EN_TOKEN.findall(norm):
        for c in _EN_WORDS.get(word, ()):
            found[c] = None
    if _HAN.search(norm):
        for m in _CN_ANY.finditer(norm):
            for c in _CN_OF[m.group()]:
                found[c] = None
    return [f"zc{c}" for c in found]
