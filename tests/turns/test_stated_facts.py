"""Facts said in chat through real turns (real Celery workers, Redis broker; SQLite and
PostgreSQL): "我的猫叫年糕" in turn 3 is a memory 40 turns later and reaches the prompt as the
current value; after "我家猫现在叫团子" the new name wins and the old one is shown only dated
beside it."""

from __future__ import annotations

from sqlmodel import Session, col, select

from nekoflow.memory.fact_memory import read_fact
from nekoflow.storage.turns import MemoryRecord, TurnStage
from tasks import enqueue_turn

CHAT = [
    "今天上班好累",
    "晚饭吃了牛肉面",
    "外面下雨了,我没带伞",
    "刚看完一部电影",
    "地铁上人好多",
    "周末想睡懒觉",
    "I finished my report today",
    "The coffee machine broke again",
]


def _turn(text: str, workers) -> str:
    event = {"session_id": "facts", "message": text, "user_id": "u1", "display_name": "小满"}
    handle = enqueue_turn("web", event)
    assert handle.wait(timeout=60) is not None and handle.status() == "done", workers.logs()
    return handle.turn_id


def _cat_rows(engine) -> list[MemoryRecord]:
    with Session(engine) as s:
        rows = s.exec(
            select(MemoryRecord)
            .where(col(MemoryRecord.title) == "用户的猫的名字")
            .order_by(col(MemoryRecord.id))
        ).all()
    return list(rows)


def _prompt_refs(engine, turn_id: str) -> list[int]:
    with Session(engine) as s:
        before = s.get(TurnStage, (turn_id, "before_turn"))
    assert before is not None
    return [ref["id"] for ref in before.result["memory_refs"]]


def test_a_stated_fact_is_remembered_and_a_change_wins(live, workers) -> None:
    workers.start()
    for i in range(3):
        _turn("你好呀" if i < 2 else "我的猫叫年糕", workers)
    for i in range(40):
        _turn(CHAT[i % len(CHAT)], workers)
    asked = _turn("你还记得我的猫叫什么吗?", workers)  # a question: stores nothing
    [cat] = _cat_rows(live.engine)
    stated = read_fact(cat.title, cat.content)
    assert stated is not None and stated.value == "年糕" and cat.superseded_by is None
    assert cat.mem_type == "long" and cat.ttl == "long"
    assert cat.id in _prompt_refs(live.engine, asked)

    _turn("我家猫现在叫团子", workers)
    asked = _turn("我的猫叫什么来着?", workers)
    old, new = _cat_rows(live.engine)
    assert old.superseded_by == new.id and old.superseded_at is not None
    assert new.superseded_by is None
    assert new.content.startswith("用户的猫的名字:团子(此前:年糕,")
    refs = _prompt_refs(live.engine, asked)
    assert new.id in refs and old.id not in refs  # the old name only beside the new one
