"""Summaries of older history: span choice, the rule summary, and the SQL task's idempotency
(SQLite and PostgreSQL)."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.llm.base import ChatResult, LLMError
from nekoflow.memory.history import get_or_create_save, write_turn
from nekoflow.memory.settings import MemorySettings
from nekoflow.memory.summaries import summarize_save
from nekoflow.memory.summarize import SpanLine, llm_messages, next_span, rule_summary
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import MemoryRecord

START = datetime(2026, 2, 1, tzinfo=UTC)
SMALL = MemorySettings(
    context_tokens=600, prompt_tokens=100, summary_tokens=100, min_window_tokens=120
)


def test_next_span_starts_after_the_last_summary_and_stays_before_the_window() -> None:
    ids = list(range(100, 110))
    assert next_span(ids, 8, set(), 4) == (0, 3)
    assert next_span(ids, 8, {103}, 4) == (4, 7)
    assert next_span(ids, 8, {103, 107}, 4) is None
    assert next_span(ids, 8, {103}, 5) is None  # only 4 lines left before the window
    assert next_span(ids, 3, set(), 4) is None


def test_rule_summary_keeps_names_promises_choices_and_likes() -> None:
    lines = [
        SpanLine(1, "小明", "我叫小明,今天好累"),
        SpanLine(2, "钦灵", "辛苦啦~"),
        SpanLine(3, "小明", "我答应你,周末一起去海边看日落!"),
        SpanLine(4, "钦灵", "今天天气真好。"),
        SpanLine(5, "小明", "I promise I will bring the red umbrella. I hate rain."),
        SpanLine(6, "小明", "我选择留下来陪你"),
    ]
    text = rule_summary(lines)
    assert "小明自称小明" in text
    assert "周末一起去海边看日落" in text and "red umbrella" in text
    assert "我选择留下来陪你" in text and "I hate rain" in text
    assert "今天天气真好" not in text
    assert len(rule_summary(lines * 20, 120)) <= 120


def test_rule_summary_of_small_talk_keeps_first_and_last_line() -> None:
    text = rule_summary([SpanLine(1, "a", "嗯"), SpanLine(2, "b", "x"), SpanLine(3, "b", "好的")])
    assert text == "a、b的对话。a:嗯 ……b:好的"
    assert rule_summary([]) == ""


def test_llm_messages_ask_to_keep_what_matters() -> None:
    system, user = llm_messages([SpanLine(1, "小明", "我答应你")])
    assert "承诺" in system["content"] and user["content"] == "小明:我答应你"


@pytest.fixture
def save_id(engine: Engine) -> int:
    """A save with 60 turns (120 lines), a promise in the 3rd turn."""
    with Session(engine) as s:
        role = Role(name="钦灵")
        s.add(role)
        s.flush()
        assert role.id is not None
        save = get_or_create_save(s, role_id=role.id, scope_id="web:u1")
        assert save.id is not None
        for i in range(60):
            said = "我答应你,等樱花开了一起去京都" if i == 2 else f"今天是平常的一天,第{i}天"
            write_turn(
                s,
                save_id=save.id,
                turn_id=f"t{i}",
                user_lines=[{"content": said, "display_name": "小明"}],
                reply_segments=[{"content": "嗯嗯,我在听"}],
                role_id=role.id,
                display_name="钦灵",
                now=START + timedelta(hours=i),
            )
        s.commit()
        return save.id


def _summaries(engine: Engine) -> list[MemoryRecord]:
    with Session(engine) as s:
        query = select(MemoryRecord).where(col(MemoryRecord.kind) == "summary")
        return list(s.exec(query.order_by(col(MemoryRecord.span_from_line))).all())


def test_summaries_are_written_once_per_span(engine: Engine, save_id: int) -> None:
    # 120 lines, the smallest window keeps the newest ~9: two spans of 40 lines are due
    assert summarize_save(engine, save_id, SMALL, max_spans=1) == 1
    assert summarize_save(engine, save_id, SMALL, max_spans=100) == 1
    assert summarize_save(engine, save_id, SMALL, max_spans=100) == 0  # a retry: nothing new
    rows = _summaries(engine)
    assert "樱花开了一起去京都" in rows[0].content and rows[0].mem_type == "summary:rule"
    spans = [(r.span_from_line, r.span_to_line) for r in rows]
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start == end + 1  # contiguous, no overlap
    assert all(r.terms and r.expires_at is None for r in rows)


def test_duplicated_tasks_write_each_span_once(engine: Engine, save_id: int) -> None:
    with ThreadPoolExecutor(4) as pool:
        done = list(pool.map(lambda _: summarize_save(engine, save_id, SMALL), range(4)))
    spans = [r.span_from_line for r in _summaries(engine)]
    assert sum(done) == len(spans) == len(set(spans)) == 2


def test_history_that_fits_needs_no_summary(engine: Engine, save_id: int) -> None:
    assert summarize_save(engine, save_id, MemorySettings()) == 0
    assert summarize_save(engine, 10_000, SMALL) == 0


class _Model:
    name = "m"

    def __init__(self, fail: bool) -> None:
        self.fail = fail

    def complete(self, messages, **kw) -> ChatResult:
        if self.fail:
            raise LLMError("down")
        return ChatResult(text="小明和钦灵约定樱花开了去京都。")


def test_model_summary_and_rule_fallback(engine: Engine, save_id: int) -> None:
    summarize_save(engine, save_id, SMALL, model=_Model(fail=False), max_spans=1)
    summarize_save(engine, save_id, SMALL, model=_Model(fail=True), max_spans=1)
    first, second = _summaries(engine)
    assert (first.mem_type, first.content) == ("summary:llm", "小明和钦灵约定樱花开了去京都。")
    assert second.mem_type == "summary:rule" and second.content


def test_a_rule_summary_takes_likes_from_the_user_not_the_character() -> None:
    from nekoflow.memory.summarize import SpanLine, rule_summary

    lines = [
        SpanLine(1, "小满", "今天好累", "user"),
        SpanLine(2, "钦灵", "haha, love that", "assistant"),
        SpanLine(3, "小满", "I hate waking up early", "user"),
        SpanLine(4, "钦灵", "我答应你明天一起去看海", "assistant"),
    ]
    text = rule_summary(lines)
    assert "love that" not in text  # the character's reply is no like of the user's
    assert "小满:I hate waking up early" in text
    assert "钦灵:我答应你明天一起去看海" in text  # a promise counts from either side
