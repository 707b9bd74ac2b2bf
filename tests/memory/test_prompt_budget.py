"""Notes beside shown rounds and memories never take the memory section past its budget."""

from __future__ import annotations

from datetime import UTC, datetime

from nekoflow.memory.retrieve import _within
from nekoflow.memory.rounds import RoundRow
from nekoflow.memory.scoring import Candidate, Scored, prompt_line
from nekoflow.tokens import estimate_tokens

AT = datetime(2026, 11, 1, tzinfo=UTC)


def _memory(i: int, text: str) -> Scored:
    c = Candidate(id=i, title="", content=text, importance=0.5, terms=None, last_used=AT)
    return Scored(id=i, score=1.0 / i, relevance=0, importance=0, recency=0, candidate=c)


def test_the_lowest_ranked_memories_go_first_when_notes_overflow() -> None:
    rounds = [
        (RoundRow(1, 1, "t", AT, "u", "r", ""), "- [2026-11-01 对话] 用户: 我住在杭州 (更新:…)")
    ]
    chosen = [_memory(i, f"记忆{i}:" + "很长的内容" * 6) for i in range(1, 6)]
    total = estimate_tokens(rounds[0][1]) + 1
    total += sum(estimate_tokens(prompt_line(m.candidate)) + 1 for m in chosen)
    budget = total - 5
    kept_rounds, kept = _within(rounds, chosen, budget)
    assert kept_rounds == rounds and [m.id for m in kept] == [1, 2, 3, 4]
    used = estimate_tokens(rounds[0][1]) + 1
    used += sum(estimate_tokens(prompt_line(m.candidate)) + 1 for m in kept)
    assert used <= budget
    assert _within(rounds, chosen, total) == (rounds, chosen)  # within budget: untouched
    assert _within(rounds, chosen, 0) == ([], [])
