"""Rule summaries carry the facts users stated; the summary task reads only the lines it needs;
a summary of a span whose fact has changed since says so (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

import nekoflow.memory.summaries as summaries
from nekoflow.memory.history import get_or_create_save, load_history_rows, write_turn
from nekoflow.memory.settings import MemorySettings
from nekoflow.memory.store import write_memories
from nekoflow.memory.summarize import SpanLine, rule_summary
from nekoflow.review import run_rule_review
from nekoflow.review.autostate import InMemoryAutoState
from nekoflow.settings import Settings
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import MemoryRecord
from nekoflow.turns.effects import memory_rows

START = datetime.now(UTC).replace(microsecond=0) - timedelta(days=90)  # facts still live
SMALL = MemorySettings(
    context_tokens=1200, prompt_tokens=900, summary_tokens=100, min_window_tokens=60,
    summary_span_lines=40,
)  # fmt: skip


def test_rule_summary_carries_the_facts_of_its_span() -> None:
    lines = [
        SpanLine(1, "小满", "今天好累啊", "user"),
        SpanLine(2, "钦灵", "我叫钦灵,我喜欢下雨天,辛苦啦", "assistant"),
        SpanLine(3, "小满", "我的猫叫年糕,我在医院上夜班", "user"),
        SpanLine(4, "钦灵", "好厉害", "assistant"),
        SpanLine(5, "小满", "下周五要面试,我生日是十月三号", "user"),
        SpanLine(6, "小满", "晚安", "user"),
    ]
    text = rule_summary(lines)
    for part in ("小满的猫的名字:年糕", "小满工作的地方:医院", "小满的班次:夜班",
                 "小满的安排·面试:下周五", "小满的生日:十月三号", "钦灵自称钦灵"):  # fmt: skip
        assert part in text, part
    assert "钦灵喜欢" not in text  # the character's likes are not the user's facts
    assert "晚安" not in text  # not a first/last-line summary


def _conversation(engine: Engine, turns: int, said: dict[int, str], review: bool = True) -> int:
    """A save with ``turns`` turns; turn i's user line is ``said[i]`` or chit-chat; each turn's
    rule review is applied as apply_deltas applies it (``review``)."""
    settings = Settings(database_url="sqlite://")
    with Session(engine) as s:
        role = Role(name="钦灵")
        s.add(role)
        s.flush()
        assert role.id is not None
        save = get_or_create_save(s, role_id=role.id, scope_id="web:u1")
        assert save.id is not None
        for i in range(turns):
            text = said.get(i, f"今天是平常的一天,第{i}天")
            at = START + timedelta(hours=i)
            write_turn(
                s, save_id=save.id, turn_id=f"t{i}",
                user_lines=[{"content": text, "display_name": "小满"}],
                reply_segments=[{"content": "嗯嗯,我在听"}], role_id=role.id,
                display_name="钦灵", now=at,
            )  # fmt: skip
            if not review:
                continue
            out = run_rule_review({"user_message": text}, autostate=InMemoryAutoState())
            rows = memory_rows(
                out, role_id=role.id, scope_id="web:u1", turn_id=f"t{i}", at=at, settings=settings
            )
            write_memories(s, rows, now=at, settings=settings)
        s.commit()
        return save.id


def test_a_summary_of_a_changed_fact_says_it_changed(engine: Engine) -> None:
    save_id = _conversation(engine, 60, {2: "我的猫叫年糕", 30: "我家猫现在叫团子"})
    assert summaries.summarize_save(engine, save_id, SMALL) >= 1
    with Session(engine) as s:
        first = s.exec(
            select(MemoryRecord)
            .where(col(MemoryRecord.kind) == "summary")
            .order_by(col(MemoryRecord.span_from_line))
        ).first()
    assert first is not None
    assert "小满的猫的名字:年糕" in first.content
    assert "(更新:用户的猫的名字已改为团子," in first.content


def test_the_summary_task_reads_only_the_lines_it_needs(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_id = _conversation(engine, 500, {}, review=False)
    read: list[int] = []

    def counted(session, save, *, limit=None):  # the real loader, counted
        rows = load_history_rows(session, save, limit=limit)
        read.append(len(rows))
        return rows

    monkeypatch.setattr(summaries, "load_history_rows", counted)
    while summaries.summarize_save(engine, save_id, SMALL, max_spans=100):
        pass  # catch up: the whole path is read while the backlog lasts
    with Session(engine) as s:
        whole = len(load_history_rows(s, save_id))
    assert whole == 1000
    read.clear()
    _more(engine, save_id, 500, 40)  # 40 more turns: two spans are due
    assert summaries.summarize_save(engine, save_id, SMALL, max_spans=100) == 2
    assert read and max(read) <= 512 < whole


def _more(engine: Engine, save_id: int, start: int, turns: int) -> None:
    with Session(engine) as s:
        role_id = s.exec(select(Role.id)).first()
        assert role_id is not None
        for i in range(start, start + turns):
            write_turn(
                s, save_id=save_id, turn_id=f"t{i}",
                user_lines=[{"content": f"第{i}天", "display_name": "小满"}],
                reply_segments=[{"content": "嗯"}], role_id=role_id, display_name="钦灵",
                now=START + timedelta(hours=i),
            )  # fmt: skip
        s.commit()
