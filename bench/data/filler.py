"""Ordinary chit-chat for bench/memory_recall.py: bilingual templates a user might send between
the facts, with slots filled from small word lists (seeded, so every run is the same). They
share everyday words with the facts (birthday, 猫, work, 住, 喝) without stating them."""

from __future__ import annotations

import random

ZH = [
    "今天上班好累,{who}又加了{n}个需求",
    "晚饭吃了{food},还行吧",
    "外面下{weather}了,我没带伞",
    "刚看完一部{genre}电影,结局有点难过",
    "地铁上人好多,挤了{n}站",
    "周末想在家睡懒觉",
    "今天跑步跑了{n}公里,腿好酸",
    "同事的猫又胖了,天天在朋友圈晒",
    "楼下新开了一家{shop},排队的人好多",
    "今天的天空特别蓝,拍了好多照片",
    "{who}今天请我喝了杯奶茶",
    "下午开会开到睡着了哈哈",
    "你说人为什么周一总是这么困",
    "朋友过生日,我们去唱了K",
    "最近总是梦到考试,好烦",
    "刚刚煮面把锅烧糊了",
    "快递又丢了,客服还不理人",
    "今天在公司楼下看到一只流浪狗,好瘦",
    "这周的工作终于做完了,松一口气",
    "晚上想吃点{food},但是懒得出门",
    "今天理发了,剪得有点短",
    "刚刚在阳台上发呆,风好舒服",
    "隔壁装修好吵,从早上八点开始",
    "又熬夜了,明天肯定起不来",
    "你喜欢下雨天还是晴天呀",
    "今天看到一个很好笑的视频,笑死我了",
    "好想去海边走走",
    "我住的那条街今天停电了半天",
    "刚和{who}吵了一架,有点郁闷",
    "今天的{food}咸得要命",
    "周五啦,终于可以休息了",
    "最近在追一部{genre}剧,停不下来",
    "中午睡了个午觉,结果睡过头了",
    "今天心情还不错",
    "电脑突然蓝屏,文件差点没保存",
    "我们组今天聚餐了,吃的{food}",
    "有点想家了",
    "你平时喜欢做什么呀",
    "刚才路过花店,买了一束{flower}",
    "手机电量又只剩百分之{n}了",
    "今天是{who}的生日,送了她一个小礼物",
    "坐公交坐过站了,尴尬",
    "今天的工作效率特别高",
    "晚上散步看到好多人在跳广场舞",
    "冰箱里只剩两个鸡蛋了",
    "在超市排了好久的队",
    "我又忘记带钥匙了,等了半小时",
    "今天被表扬了,开心",
    "好久没运动了,肚子上都是肉",
    "明天要早起,先睡啦",
]
EN = [
    "work was exhausting today, {who_en} added {n} more tickets",
    "had {food_en} for dinner, it was fine",
    "it's {weather_en} outside and I forgot my umbrella",
    "just finished a {genre_en} movie, the ending got me",
    "the subway was packed, stood for {n} stops",
    "thinking of sleeping in all weekend",
    "went for a {n}k run, my legs are jelly",
    "my friend's birthday party was so loud last night",
    "a new {shop_en} opened downstairs, the line is crazy",
    "the sky was so blue today, took a bunch of photos",
    "{who_en} bought me a bubble tea today",
    "almost fell asleep in the afternoon meeting lol",
    "why are mondays always like this",
    "been having weird dreams about exams again",
    "burnt my noodles, the pot is ruined",
    "my package got lost again, support isn't answering",
    "saw a stray dog by the office, so skinny",
    "finally done with this week's work, phew",
    "craving {food_en} but too lazy to go out",
    "got a haircut, it's a bit too short",
    "the neighbours are renovating, drilling since 8am",
    "stayed up too late again, tomorrow will hurt",
    "do you like rainy days or sunny days?",
    "saw the funniest video today, can't stop laughing",
    "I really want to go to the beach",
    "the power went out on my street for half a day",
    "had a small argument with {who_en}, feeling meh",
    "it's friday, finally",
    "binge-watching a {genre_en} show, can't stop",
    "napped at lunch and overslept, oops",
    "my laptop crashed and I nearly lost my file",
    "team dinner tonight, we had {food_en}",
    "kind of homesick today",
    "what do you usually do for fun?",
    "bought some {flower_en} on the way home",
    "my phone is at {n} percent again",
    "it was {who_en}'s birthday, got them a little gift",
    "missed my bus stop, so embarrassing",
    "super productive day at work",
    "only two eggs left in the fridge",
    "waited forever at the supermarket checkout",
    "forgot my keys again, waited half an hour",
    "got praised by my manager today, feeling good",
    "haven't exercised in ages",
    "early start tomorrow, heading to bed",
    "the coffee machine at the office broke again",
    "read a few pages before bed, felt nice",
    "my neighbour's cat sat on my doorstep all morning",
    "tried a new recipe, it was edible at least",
    "the weather app lied to me again",
]
SLOTS = {
    "who": ["老板", "同事", "室友", "表妹", "产品经理", "隔壁组的人"],
    "who_en": ["my boss", "a coworker", "my roommate", "the PM", "my cousin"],
    "food": ["牛肉面", "麻辣烫", "饺子", "炒饭", "寿司", "烤肉", "螺蛳粉"],
    "food_en": ["pizza", "ramen", "tacos", "a burrito", "dumplings", "curry", "pho"],
    "weather": ["雨", "雪", "冰雹"],
    "weather_en": ["raining", "pouring", "snowing"],
    "genre": ["科幻", "悬疑", "爱情", "动画", "恐怖"],
    "genre_en": ["sci-fi", "horror", "romance", "detective", "animated"],
    "shop": ["面包店", "火锅店", "书店", "奶茶店"],
    "shop_en": ["bakery", "ramen place", "bookshop", "bubble tea shop"],
    "flower": ["向日葵", "玫瑰", "雏菊"],
    "flower_en": ["sunflowers", "tulips", "daisies"],
}


def filler_lines(count: int, seed: int = 7) -> list[str]:
    """``count`` chit-chat lines, alternating languages in runs, the same for a seed."""
    rng = random.Random(seed)
    out: list[str] = []
    for _ in range(count):
        template = rng.choice(ZH if rng.random() < 0.55 else EN)
        values = {k: rng.choice(v) for k, v in SLOTS.items()}
        out.append(template.format(n=rng.randint(2, 12), **values))
    return out


REPLIES_ZH = ["嗯嗯,我在听呢", "辛苦啦,摸摸头", "哈哈,真的假的", "要照顾好自己哦", "听起来不错呀"]
REPLIES_EN = [
    "oh no, that sounds rough",
    "haha, love that",
    "I'm listening",
    "take care of yourself",
]
