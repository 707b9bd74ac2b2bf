"""Held-out sentences for the fact extractor: written before the extractor, never tuned against.

Each case: (user message, expected facts as (slot, value) pairs). An empty list: nothing about
the user is stated (a question, chit-chat, someone else's fact, a false trigger).
"""

from __future__ import annotations

HELDOUT: list[tuple[str, list[tuple[str, str]]]] = [
    # identity
    ("对了我叫林夏,树林的林,夏天的夏", [("user.name", "林夏")]),
    ("你叫我阿青就行啦", [("user.nickname", "阿青")]),
    ("my name's Daniel btw", [("user.name", "Daniel")]),
    ("just call me Danny 😄", [("user.nickname", "Danny")]),
    ("我今年29岁了,老了老了", [("user.age", "29")]),
    ("I'm 34 years old and still can't cook", [("user.age", "34")]),
    ("我生日是十月三号哦", [("user.birthday", "十月三号")]),
    ("my birthday is on March 14th!", [("user.birthday", "March 14th")]),
    # pets and family
    ("我家的狗叫豆豆,是只柯基", [("user.pet.dog.name", "豆豆"), ("user.pet.dog.breed", "柯基")]),
    ("my cat's name is Pepper", [("user.pet.cat.name", "Pepper")]),
    ("我养了一只兔子,叫雪球", [("user.pet.rabbit.name", "雪球")]),
    ("we have a dog called Biscuit", [("user.pet.dog.name", "Biscuit")]),
    ("我妹妹叫林雨", [("user.family.sister.name", "林雨")]),
    ("my mom's name is Linda", [("user.family.mother.name", "Linda")]),
    # work, school, schedule
    ("我是护士,在市医院上班", [("user.job", "护士"), ("user.workplace", "市医院")]),
    (
        "I work night shifts at the warehouse",
        [("user.schedule", "night shifts"), ("user.workplace", "the warehouse")],
    ),
    ("我在浙大读研", [("user.school", "浙大")]),
    ("I'm a software engineer", [("user.job", "software engineer")]),
    ("这周我都上早班", [("user.schedule", "早班")]),
    # places
    ("我住在苏州", [("user.home_city", "苏州")]),
    ("I live in Seattle now", [("user.home_city", "Seattle")]),
    ("我老家是四川的", [("user.hometown", "四川")]),
    ("I'm originally from Manchester", [("user.hometown", "Manchester")]),
    ("我上个月搬到了深圳", [("user.home_city", "深圳")]),
    ("we moved to Denver last spring", [("user.home_city", "Denver")]),
    # likes / dislikes / allergies
    ("我超喜欢吃火锅的", [("user.likes", "火锅")]),
    ("I hate cilantro so much", [("user.dislikes", "cilantro")]),
    ("我对花生过敏", [("user.allergy", "花生")]),
    ("I'm allergic to shellfish", [("user.allergy", "shellfish")]),
    ("我最喜欢的颜色是绿色", [("user.favourite.颜色", "绿色")]),
    ("my favourite band is Radiohead", [("user.favourite.band", "Radiohead")]),
    # plans and promises
    ("下周三我要去考驾照", [("user.plan.考驾照", "下周三")]),
    ("I have a dentist appointment on Thursday", [("user.plan.dentist appointment", "Thursday")]),
    ("remind me Saturday to water the plants", [("user.plan.water the plants", "Saturday")]),
    ("明天下午我要去面试", [("user.plan.面试", "明天下午")]),
    # changes
    ("我换工作了,现在在腾讯上班", [("user.workplace", "腾讯"), ("user.event.换工作", "最近")]),
    ("I don't eat meat anymore", [("user.dislikes", "meat")]),
    ("我已经不喜欢喝咖啡了", [("user.dislikes", "咖啡")]),
    ("我现在是杭州人啦", [("user.home_city", "杭州")]),
    ("our new vet is Dr. Park", [("user.vet", "Dr. Park")]),
    # questions and non-statements
    ("你还记得我妹妹叫什么吗?", []),
    ("我住在哪来着?", []),
    ("what's my dog's name again?", []),
    ("do you remember where I work?", []),
    ("我叫了辆车,马上到", []),
    ("他叫什么名字来着", []),
    ("我今天好累啊", []),
    ("哈哈哈哈笑死我了", []),
    ("is it raining where you live?", []),
    ("你喜欢吃什么呀?", []),
    ("my friend lives in Boston", []),
    ("她最喜欢的颜色是红色", []),
    ("I think the movie was okay", []),
    ("我刚才叫你好几声了", []),
    ("我生日那天你会来吗", []),
    ("what time is it", []),
    ("嗯嗯", []),
    ("are you allergic to anything?", []),
    ("我们去哪儿吃饭好呢", []),
    ("can you call me later?", []),
]
