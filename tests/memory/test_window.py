"""The token-sized history window and the memory block."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from nekoflow.memory.scoring import Candidate, Scored
from nekoflow.memory.window import line_text, memory_block, window
from nekoflow.tokens import estimate_tokens


def _line(content: str, action: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(content=content, action_content=action)


def test_line_text_joins_content_and_action() -> None:
    assert line_text(_line("你好", "挥手")) == "你好 挥手"
    assert line_text(_line("hi")) == "hi"


def test_window_keeps_the_newest_lines_that_fit() -> None:
    rows = [_line("一二三四五六七八九十") for _ in range(10)]  # 10 + 4 tokens each
    assert len(window(rows, 14 * 3, estimate_tokens)) == 3
    assert len(window(rows, 14 * 3 + 13, estimate_tokens)) == 3
    assert window(rows, 10_000, estimate_tokens) == rows


def test_window_keeps_at_least_the_last_line() -> None:
    rows = [_line("short"), _line("x" * 400)]
    assert window(rows, 5, estimate_tokens) == rows[-1:]
    assert window([], 100, estimate_tokens) == []


def test_window_counts_english_words_and_chinese_characters() -> None:
    rows = [_line("I promised to bring the umbrella tomorrow"), _line("我答应明天带伞")]
    # 11 tokens + 4 (English), 7 + 4 (Chinese)
    assert window(rows, 11, estimate_tokens) == rows[-1:]
    assert window(rows, 25, estimate_tokens) == rows[-1:]
    assert window(rows, 26, estimate_tokens) == rows


def _scored(i: int, title: str, content: str) -> Scored:
    c = Candidate(
        id=i,
        title=title,
        content=content,
        importance=0.5,
        terms=None,
        last_used=datetime(2026, 1, 1, tzinfo=UTC),
    )
    return Scored(id=i, score=1.0, relevance=1.0, importance=1.0, recency=1.0, candidate=c)


def test_memory_block_lists_summaries_then_memories_on_one_line_each() -> None:
    memories = [_scored(2, "名字", "用户叫小明"), _scored(3, "", "likes tea")]
    block = memory_block([("1", "小明答应\n周末去看海")], memories)
    assert block.splitlines() == [
        "- [往事]: 小明答应 周末去看海",
        "- 名字: 用户叫小明",
        "- likes tea",
    ]
    assert memory_block([], []) == ""
