"""A scripted 800-turn conversation over four simulated months (SQLite and PostgreSQL): a
name, a preference and a promise planted in the first day stay reachable in the prompt when a
question needs them, through expiry, consolidation and summaries. Driven through the store
functions the turn stages call (write_turn, write_memories, summarize_save, prompt_memories,
touch), not through Celery."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, func, select

from nekoflow.memory.history import get_or_create_save, write_turn
from nekoflow.memory.retrieve import PromptMemories, prompt_memories
from nekoflow.memory.settings import MemorySettings
from nekoflow.memory.store import touch, write_memories
from nekoflow.memory.summaries import summarize_save
from nekoflow.settings import Settings
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import MemoryRecord
from nekoflow.turns.effects import memory_expiry

START = datetime(2026, 1, 1, 8, tzinfo=UTC)
STEP = timedelta(hours=3, minutes=45)
TURNS = 800
SETTINGS = Settings(database_url="sqlite://")
MS = MemorySettings()
PLANTED = {
    5: ("我叫小明,以后就这么叫我吧", 0.9, "long"),
    12: ("我最喜欢的水果是草莓,每次吃都很开心", 0.6, "short"),
    30: ("我答应你,等樱花开了我们一起去京都看樱花", 0.7, "short"),
}
FILLER = [
    "今天上班好累,老板又加了{n}个需求",
    "晚饭吃了一碗牛肉面,加了{n}勺辣椒",
    "外面下雨了,我没带伞",
    "刚刚看完一部电影,结局有点难过",
    "地铁上人好多,挤了{n}站",
    "周末想在家睡懒觉",
    "我在学吉他,今天练了{n}分钟",
    "猫咪又把杯子推下桌子了",
    "今天跑步跑了{n}公里",
    "最近在读一本推理小说",
    "I finished {n} pages of my report today",
    "The coffee machine at work broke again",
    "I watched a documentary about whales",
    "My neighbour's dog barked all night",
    "公司楼下新开了一家面包店",
    "今天的天空特别蓝",
]
REPLY = "嗯嗯,我在听呢,辛苦啦"


def _ask(s: Session, role_id: int, question: str, now: datetime) -> PromptMemories:
    return prompt_memories(
        s,
        role_id=role_id,
        scope_id="web:u1",
        message=question,
        context=[],
        now=now,
        settings=MS,
    )


def test_planted_facts_stay_reachable_over_months_of_turns(engine: Engine) -> None:
    with Session(engine) as s:
        role = Role(name="钦灵")
        s.add(role)
        s.flush()
        assert role.id is not None
        role_id = role.id
        save = get_or_create_save(s, role_id=role_id, scope_id="web:u1")
        assert save.id is not None
        save_id = save.id
        s.commit()
    at = START
    s = Session(engine)
    for i in range(TURNS):
        at = START + i * STEP
        said, importance, ttl = PLANTED.get(i, (FILLER[i % len(FILLER)], 0.3, "short"))
        said = said.format(n=i % 7 + 1)
        if i % 25 == 24:  # the character's prompts use memories along the way
            got = _ask(s, role_id, said, at)
            touch(s, [m.candidate for m in got.chosen], at, SETTINGS)
        write_turn(
            s,
            save_id=save_id,
            turn_id=f"t{i}",
            user_lines=[{"content": said, "display_name": "小明"}],
            reply_segments=[{"content": REPLY}],
            role_id=role_id,
            display_name="钦灵",
            now=at,
        )
        memory = MemoryRecord(
            role_id=role_id,
            scope_id="web:u1",
            turn_id=f"t{i}",
            title=said[:20],
            content=f"用户:{said}\n角色:{REPLY}",
            importance=importance,
            ttl=ttl,
            expires_at=memory_expiry(ttl, at, SETTINGS),
            created_at=at,
        )
        write_memories(s, [memory], now=at, settings=SETTINGS)
        if i % 10 == 9:  # commits in blocks of 10 turns keep the test fast
            s.commit()
        if i % 10 == 9:  # the memory queue's task, after every 10th turn
            summarize_save(engine, save_id, MS)
    s.commit()
    s.close()
    assert at - START > timedelta(days=120)
    later = at + timedelta(hours=2)
    with Session(engine) as s:
        fruit = _ask(s, role_id, "你还记得我最喜欢的水果是什么吗?", later)
        trip = _ask(s, role_id, "我们约好樱花开了要去哪里来着?", later)
        name = _ask(s, role_id, "你还记得我叫什么名字吗?", later)
        facts = s.exec(
            select(func.count()).select_from(MemoryRecord).where(col(MemoryRecord.kind) == "fact")
        ).one()
        summaries = s.exec(
            select(func.count())
            .select_from(MemoryRecord)
            .where(col(MemoryRecord.kind) == "summary")
        ).one()
    assert "草莓" in fruit.block
    assert "京都" in trip.block
    assert "小明" in name.block
    for got in (fruit, trip, name):
        assert got.tokens <= MS.prompt_tokens + MS.summary_tokens
    assert facts < TURNS / 4  # restatements were consolidated, not stored again
    assert summaries > TURNS / 25  # the distant past lives on in summaries
