"""Stated facts stored by slot on real databases (SQLite, PostgreSQL): the rule review's facts
through the rows ``apply_deltas`` writes — restating is a NOOP, the newest value wins, the old
one is kept superseded with its date and shown only beside the new one, summaries are noted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.memory.fact_memory import read_fact, update_line
from nekoflow.memory.fact_updates import stale_notes
from nekoflow.memory.store import add_indexed, write_memories
from nekoflow.review import run_rule_review
from nekoflow.review.autostate import InMemoryAutoState
from nekoflow.review.models import FactItem, ReviewOutput
from nekoflow.settings import Settings
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import MemoryRecord
from nekoflow.turns.effects import memory_rows

START = datetime(2026, 3, 2, 9, tzinfo=UTC)
SETTINGS = Settings(database_url="sqlite://")


@pytest.fixture
def role_id(engine: Engine) -> int:
    with Session(engine) as s:
        role = Role(name="钦灵")
        s.add(role)
        s.commit()
        assert role.id is not None
        return role.id


def _say(engine: Engine, role_id: int, text: str, at: datetime, turn: str) -> dict[str, int]:
    """One turn's rule review of ``text`` written as ``apply_deltas`` writes it."""
    out = run_rule_review({"user_message": text, "ai_reply": "嗯嗯"}, autostate=InMemoryAutoState())
    with Session(engine) as s:
        rows = memory_rows(
            out, role_id=role_id, scope_id="web:u1", turn_id=turn, at=at, settings=SETTINGS
        )
        counts = write_memories(s, rows, now=at, settings=SETTINGS)
        s.commit()
    return {"added": counts.added, "unchanged": counts.unchanged, "superseded": counts.superseded}


def _facts(engine: Engine, role_id: int) -> list[MemoryRecord]:
    with Session(engine) as s:
        rows = s.exec(
            select(MemoryRecord)
            .where(col(MemoryRecord.role_id) == role_id, col(MemoryRecord.kind) == "fact")
            .order_by(col(MemoryRecord.id))
        ).all()
        return [r for r in rows if read_fact(r.title, r.content) is not None]


def test_a_stated_fact_is_a_long_term_memory(engine: Engine, role_id: int) -> None:
    _say(engine, role_id, "我的猫叫年糕", START, "t1")
    [cat] = _facts(engine, role_id)
    assert (cat.title, cat.mem_type, cat.ttl, cat.target) == (
        "用户的猫的名字",
        "long",
        "long",
        "user",
    )
    assert cat.content == "用户的猫的名字:年糕\n原话:我的猫叫年糕"
    assert cat.fact_key == "slot:user.pet.cat.name"


def test_restating_a_value_is_a_noop_and_questions_write_nothing(
    engine: Engine, role_id: int
) -> None:
    _say(engine, role_id, "叫我小满就好", START, "t1")
    assert _say(engine, role_id, "嗯,叫我小满吧", START + timedelta(days=1), "t2") == {
        "added": 0,
        "unchanged": 1,
        "superseded": 0,
    }
    for i, q in enumerate(("你还记得我叫什么吗?", "我叫了个外卖", "我现在住在哪座城市呀?")):
        _say(engine, role_id, q, START + timedelta(days=2 + i), f"q{i}")
    [name] = _facts(engine, role_id)
    assert name.content.startswith("用户希望被叫作:小满\n") and name.superseded_by is None
    assert name.mentions == 2


def test_the_newest_value_wins_and_the_old_one_is_kept_dated(engine: Engine, role_id: int) -> None:
    _say(engine, role_id, "我住在北京", START, "t1")
    later = START + timedelta(days=20)
    assert _say(engine, role_id, "我现在是成都人了", later, "t2")["superseded"] == 1
    old, new = _facts(engine, role_id)
    assert old.superseded_by == new.id and old.superseded_at == later
    assert new.superseded_by is None
    assert (
        new.content.split("\n")[0] == "用户现在住的城市:成都(此前:北京,2026-03-02记;2026-03-22起改)"
    )


@pytest.mark.parametrize(
    ("first", "then", "current"),
    [
        ("my vet is Dr. Lee", "our new vet is Dr. Park", "用户的兽医:Dr. Park"),
        ("我喜欢喝咖啡", "我已经不喜欢喝咖啡了", "用户不喜欢:咖啡"),
        ("I love coffee", "I don't drink coffee anymore", "用户不喜欢:coffee"),
        ("下周五要面试", "面试改到下周一了", "用户的安排·面试:下周一"),
    ],
)
def test_changes_in_ordinary_words_supersede(
    engine: Engine, role_id: int, first: str, then: str, current: str
) -> None:
    _say(engine, role_id, first, START, "t1")
    _say(engine, role_id, then, START + timedelta(days=3), "t2")
    live = [r for r in _facts(engine, role_id) if r.superseded_by is None]
    assert [r.content.split("\n")[0].split("(")[0] for r in live] == [current]


def test_a_summary_stating_an_old_value_is_noted(engine: Engine, role_id: int) -> None:
    _say(engine, role_id, "我的猫叫年糕", START, "t1")
    with Session(engine) as s:
        summary = MemoryRecord(
            role_id=role_id,
            scope_id="web:u1",
            kind="summary",
            content="用户、钦灵的对话。用户的猫的名字:年糕",
            created_at=START,
        )
        add_indexed(s, [summary])
        s.commit()
    _say(engine, role_id, "我家猫现在叫团子", START + timedelta(days=5), "t2")
    _say(engine, role_id, "我家猫现在叫团子", START + timedelta(days=6), "t3")  # restated
    with Session(engine) as s:
        noted = s.exec(select(MemoryRecord).where(col(MemoryRecord.kind) == "summary")).one()
    assert noted.content.endswith("年糕 (更新:用户的猫的名字已改为团子,2026-03-07)")
    assert "团子" in (noted.terms or "")


def test_llm_facts_go_through_the_same_consolidation(engine: Engine, role_id: int) -> None:
    _say(engine, role_id, "my cat's name is Pepper", START, "t1")
    out = ReviewOutput(
        source="llm",
        facts=[FactItem(slot="user.pet.cat.name", value="Salt", sentence="we renamed the cat")],
    )
    with Session(engine) as s:
        rows = memory_rows(
            out, role_id=role_id, scope_id="web:u1", turn_id="t2", at=START, settings=SETTINGS
        )
        assert write_memories(s, rows, now=START, settings=SETTINGS).superseded == 1
        s.commit()
    live = [r for r in _facts(engine, role_id) if r.superseded_by is None]
    assert [r.content.split("\n")[0].split("(")[0] for r in live] == ["用户的猫的名字:Salt"]


def test_update_line_shows_old_values_only_beside_the_current_one() -> None:
    at = datetime(2026, 1, 5, tzinfo=UTC)
    assert update_line("用户的名字", "林一", [], None) == "用户的名字:林一"
    line = update_line("用户的名字", "林一", [("林夏", at)], at + timedelta(days=1))
    assert line == "用户的名字:林一(此前:林夏,2026-01-05记;2026-01-06起改)"


def test_a_past_round_stating_an_old_value_gets_the_current_one(
    engine: Engine, role_id: int
) -> None:
    now = datetime.now(UTC)
    _say(engine, role_id, "我的猫叫年糕,我住在北京", now - timedelta(days=9), "t1")
    _say(engine, role_id, "我搬到成都了", now - timedelta(days=2), "t2")
    with Session(engine) as s:
        note = stale_notes(s, role_id, "web:u1", "我的猫叫年糕,我住在北京", now)
        assert stale_notes(s, role_id, "web:u1", "我的猫叫年糕", now) == ""  # still current
        assert stale_notes(s, role_id, "web:u1", "今天好累", now) == ""
    day = (now - timedelta(days=2)).strftime("%Y-%m-%d")
    assert note == f"(更新:用户现在住的城市已改为成都,{day})"
