"""Long-term memory against real databases (SQLite FTS5 and PostgreSQL tsvector): retrieval of
a planted fact among many, consolidation operations, use marking and statistics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.memory.lexical import scope_token
from nekoflow.memory.retrieve import prompt_memories, retrieve
from nekoflow.memory.search import corpus_stats
from nekoflow.memory.settings import MemorySettings
from nekoflow.memory.store import forget, touch, write_memories
from nekoflow.settings import Settings
from nekoflow.storage.dialogue import Role
from nekoflow.storage.memory import MemoryTermStat
from nekoflow.storage.turns import MemoryRecord

START = datetime(2026, 1, 1, tzinfo=UTC)
SETTINGS = Settings(database_url="sqlite://")
MS = MemorySettings()
FILLER = [
    "今天聊了天气,外面在下雨",
    "一起看了一部科幻电影",
    "用户说工作很累,想早点睡",
    "We talked about the weather and the long week",
    "角色讲了一个关于月亮的故事",
    "用户晚饭吃了面条",
    "They played a board game and laughed a lot",
    "用户抱怨地铁太挤了",
]


@pytest.fixture
def role_id(engine: Engine) -> int:
    with Session(engine) as s:
        role = Role(name="钦灵")
        s.add(role)
        s.commit()
        assert role.id is not None
        return role.id


def _mem(
    role_id: int, content: str, at: datetime, importance: float = 0.5, title: str = ""
) -> MemoryRecord:
    return MemoryRecord(
        role_id=role_id,
        scope_id="web:u1",
        title=title,
        content=content,
        importance=importance,
        ttl="long",
        expires_at=at + timedelta(days=180),
        created_at=at,
    )


def _write(engine: Engine, role_id: int, contents: list[str], at: datetime, **kw) -> None:
    with Session(engine) as s:
        write_memories(s, [_mem(role_id, c, at, **kw) for c in contents], now=at, settings=SETTINGS)
        s.commit()


def _plant(engine: Engine, role_id: int, n: int = 300) -> datetime:
    """A promise on day 1, then ``n`` unrelated memories over the following weeks."""
    _write(engine, role_id, ["用户答应周末带小猫去海边看日落"], START, importance=0.3)
    with Session(engine) as s:
        rows = [
            _mem(
                role_id,
                f"{FILLER[i % len(FILLER)]} (第{i}次)",
                START + timedelta(hours=2 + i * 2),
                0.8,
            )
            for i in range(n)
        ]
        write_memories(s, rows, now=START + timedelta(days=30), settings=SETTINGS)
        s.commit()
    return START + timedelta(days=40)


def test_a_fact_planted_weeks_ago_is_retrieved_among_many(engine: Engine, role_id: int) -> None:
    now = _plant(engine, role_id)
    with Session(engine) as s:
        got = prompt_memories(
            s,
            role_id=role_id,
            scope_id="web:u1",
            message="你还记得答应过要带小猫去哪里吗?",
            context=["今天好无聊"],
            now=now,
            settings=MS,
        )
    facts = [m for m in got.used if m.kind == "fact"]
    assert facts and "海边" in got.block.splitlines()[0]
    assert facts[0].relevance == 1.0 and facts[0].score is not None
    assert got.tokens <= MS.prompt_tokens + 10


def test_english_fact_is_retrieved(engine: Engine, role_id: int) -> None:
    _write(engine, role_id, ["Alice promised to bring the red umbrella on Friday"], START)
    _write(engine, role_id, FILLER, START + timedelta(days=3), importance=0.9)
    with Session(engine) as s:
        ranked = retrieve(
            s,
            role_id=role_id,
            scope_id="web:u1",
            message="Did Alice bring the umbrella?",
            context=[],
            now=START + timedelta(days=20),
            settings=MS,
        )
    assert "umbrella" in ranked[0].candidate.content


def test_other_scopes_are_never_retrieved(engine: Engine, role_id: int) -> None:
    with Session(engine) as s:
        other = _mem(role_id, "用户答应带小猫去海边", START)
        other.scope_id = "web:u2"
        write_memories(s, [other], now=START, settings=SETTINGS)
        s.commit()
        assert (
            retrieve(
                s,
                role_id=role_id,
                scope_id="web:u1",
                message="小猫海边",
                context=[],
                now=START,
                settings=MS,
            )
            == []
        )


def test_consolidation_add_noop_update_delete(engine: Engine, role_id: int) -> None:
    at = START
    with Session(engine) as s:
        c = write_memories(s, [_mem(role_id, "我叫小明", at, 0.4)], now=at, settings=SETTINGS)
        assert (c.added, c.updated, c.unchanged, c.superseded) == (1, 0, 0, 0)
        c = write_memories(s, [_mem(role_id, "我叫小明", at, 0.9)], now=at, settings=SETTINGS)
        assert (c.added, c.unchanged) == (0, 1)
        c = write_memories(s, [_mem(role_id, "对了,我叫小明", at, 0.2)], now=at, settings=SETTINGS)
        assert (c.added, c.updated) == (0, 1)
        c = write_memories(s, [_mem(role_id, "其实我叫小红", at, 0.5)], now=at, settings=SETTINGS)
        assert (c.added, c.superseded) == (1, 1)
        s.commit()
        rows = list(s.exec(select(MemoryRecord).order_by(col(MemoryRecord.id))).all())
    old, new = rows
    assert (old.content, old.importance, old.mentions) == ("对了,我叫小明", 0.9, 3)
    assert old.superseded_by == new.id and new.superseded_by is None
    assert new.fact_key == old.fact_key == "slot:name"
    with Session(engine) as s:
        ranked = retrieve(
            s,
            role_id=role_id,
            scope_id="web:u1",
            message="我叫什么",
            context=[],
            now=at,
            settings=MS,
        )
    assert [r.id for r in ranked] == [new.id]  # the replaced fact is history, never retrieved


def test_statistics_follow_writes_updates_and_forget(engine: Engine, role_id: int) -> None:
    _write(engine, role_id, ["我最喜欢草莓蛋糕", "今天下雨了"], START)
    with Session(engine) as s:
        stats = corpus_stats(s, role_id, "web:u1", ["草莓", "下雨"])
        assert (stats.docs, stats.df["草莓"], stats.df["下雨"]) == (2, 1, 1)
        rows = s.exec(select(MemoryRecord).where(col(MemoryRecord.content) == "今天下雨了")).all()
        assert forget(s, rows) == 1
        s.commit()
        stats = corpus_stats(s, role_id, "web:u1", ["草莓", "下雨"])
        assert stats.docs == 1 and stats.df.get("下雨", 0) == 0
        key = scope_token(role_id, "web:u1")
        assert s.get(MemoryTermStat, (key, "草莓")).df == 1


def test_touch_marks_use_in_one_update_and_stretches_expiry(engine: Engine, role_id: int) -> None:
    _write(engine, role_id, ["用户喜欢下雨天"], START, importance=1.0)
    now = START + timedelta(days=2)
    with Session(engine) as s:
        got = prompt_memories(
            s, role_id=role_id, scope_id="web:u1", message="下雨", context=[], now=now, settings=MS
        )
        assert touch(s, [m.candidate for m in got.chosen], now, SETTINGS) == 1
        s.commit()
        m = s.exec(select(MemoryRecord)).one()
    assert m.last_accessed_at == now and m.access_count == 1
    assert m.expires_at == now + timedelta(days=180 * 2 * 2)
