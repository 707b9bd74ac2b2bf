"""The LLM review decides ADD / UPDATE / DELETE / NOOP against the memories it was shown: the
answer is normalised (a bad op falls back to the rules), and the SQL shell carries a decision out
only for a live fact of the same scope (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.memory.consolidate import Decision, model_decision
from nekoflow.memory.store import write_memories
from nekoflow.review.llm_review import build_messages, clamp_output
from nekoflow.review.models import ReviewInput, ReviewOutput
from nekoflow.settings import Settings
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import MemoryRecord

NOW = datetime.now(UTC).replace(microsecond=0)
SETTINGS = Settings(database_url="sqlite://")


def test_the_review_prompt_shows_the_memories_by_id() -> None:
    inp = ReviewInput(
        user_message="其实我现在更喜欢蓝莓了",
        memories=[{"id": 7, "title": "", "content": "用户最喜欢草莓"}],
    )
    payload = json.loads(build_messages(inp)[1]["content"])
    assert payload["existing_memories"] == [{"id": 7, "title": "", "content": "用户最喜欢草莓"}]
    assert ReviewInput(memories=None).memories == []  # None means none


@pytest.mark.parametrize(
    ("item", "op", "memory_id"),
    [
        ({"op": "update", "memory_id": "7"}, "UPDATE", 7),
        ({"op": " Delete ", "memory_id": 7}, "DELETE", 7),
        ({"op": "NOOP", "memory_id": 3}, "NOOP", 3),
        ({"op": "ADD", "memory_id": 9}, "ADD", None),
        ({"op": "UPDATE"}, None, None),  # no id: the rules decide
        ({"op": "MERGE", "memory_id": 7}, None, None),  # unknown op
        ({"op": "UPDATE", "memory_id": True}, None, None),
        ({"op": 5, "memory_id": "x"}, None, None),
    ],
)
def test_the_models_op_is_normalised_or_dropped(item: dict, op, memory_id) -> None:
    raw = {"should_write_memory": True, "memory_items": [{"content": "用户喜欢蓝莓", **item}]}
    out = ReviewOutput.model_validate(clamp_output(raw))
    assert (out.memory_items[0].op, out.memory_items[0].memory_id) == (op, memory_id)


def test_model_decisions_need_a_live_target() -> None:
    assert model_decision("UPDATE", 4, True) == [Decision("UPDATE", 4)]
    assert model_decision("NOOP", 4, True) == [Decision("NOOP", 4)]
    assert model_decision("DELETE", 4, True) == [Decision("DELETE", 4), Decision("ADD")]
    assert model_decision("ADD", None, True) is None  # the rules still catch duplicates
    assert model_decision("UPDATE", 4, False) is None
    assert model_decision(None, None, True) is None


@pytest.fixture
def role_id(engine: Engine) -> int:
    with Session(engine) as s:
        role = Role(name="钦灵")
        s.add(role)
        s.commit()
        assert role.id is not None
        return role.id


def _rec(role_id: int, content: str, scope: str = "web:u1") -> MemoryRecord:
    return MemoryRecord(
        role_id=role_id,
        scope_id=scope,
        content=content,
        importance=0.6,
        ttl="long",
        expires_at=NOW + timedelta(days=90),
        created_at=NOW,
    )


def _write(engine: Engine, rows: list[MemoryRecord], decided=None):
    with Session(engine) as s:
        counts = write_memories(s, rows, now=NOW, settings=SETTINGS, decided=decided)
        s.commit()
        return counts


def _live(engine: Engine) -> list[str]:
    with Session(engine) as s:
        rows = s.exec(
            select(MemoryRecord)
            .where(col(MemoryRecord.superseded_by).is_(None))
            .order_by(col(MemoryRecord.id))
        ).all()
        return [r.content for r in rows]


def _id(engine: Engine, content: str) -> int:
    with Session(engine) as s:
        rec = s.exec(select(MemoryRecord).where(MemoryRecord.content == content)).one()
        assert rec.id is not None
        return rec.id


def test_the_models_decisions_are_carried_out(engine: Engine, role_id: int) -> None:
    _write(engine, [_rec(role_id, "用户最喜欢草莓"), _rec(role_id, "用户养了一只猫")])
    berry, cat = _id(engine, "用户最喜欢草莓"), _id(engine, "用户养了一只猫")
    # Words the rules would never link: the model says it replaces the strawberry fact.
    counts = _write(engine, [_rec(role_id, "现在更爱蓝莓了")], decided=[("DELETE", berry)])
    assert (counts.added, counts.superseded) == (1, 1)
    assert _live(engine) == ["用户养了一只猫", "现在更爱蓝莓了"]
    counts = _write(engine, [_rec(role_id, "猫叫年糕")], decided=[("UPDATE", cat)])
    assert (counts.added, counts.updated) == (0, 1)
    assert _live(engine) == ["猫叫年糕", "现在更爱蓝莓了"]
    counts = _write(engine, [_rec(role_id, "那只猫")], decided=[("NOOP", cat)])
    assert (counts.added, counts.unchanged) == (0, 1)
    with Session(engine) as s:
        kept = s.get(MemoryRecord, cat)
        assert kept is not None and kept.content == "猫叫年糕" and kept.mentions == 3


def test_a_decision_about_another_scope_or_a_dead_memory_goes_to_the_rules(
    engine: Engine, role_id: int
) -> None:
    _write(engine, [_rec(role_id, "别人的秘密", scope="web:other")])
    other = _id(engine, "别人的秘密")
    counts = _write(engine, [_rec(role_id, "今天下雨了")], decided=[("UPDATE", other)])
    assert counts.added == 1 and "别人的秘密" in _live(engine)  # untouched
    counts = _write(engine, [_rec(role_id, "用户说今天下雨了")], decided=[("UPDATE", 10**9)])
    assert counts.added + counts.updated + counts.unchanged == 1
    # ADD from the model still goes through the rules: an exact duplicate is a NOOP.
    counts = _write(engine, [_rec(role_id, "今天下雨了")], decided=[("ADD", None)])
    assert (counts.added, counts.unchanged) == (0, 1)
