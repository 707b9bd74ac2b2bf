"""The retrieval score (relevance + importance + recency), the token budget and expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from nekoflow.memory.lexical import CorpusStats, index_text, query_terms, terms
from nekoflow.memory.scoring import (
    Candidate,
    MemoryWeights,
    cosine,
    extended_expiry,
    memory_line,
    rank,
    select_within_budget,
)
from nekoflow.tokens import estimate_tokens

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _cand(i: int, content: str, importance: float = 0.5, hours: float = 1.0) -> Candidate:
    return Candidate(
        id=i,
        title="",
        content=content,
        importance=importance,
        terms=index_text(1, "s", "", content),
        last_used=NOW - timedelta(hours=hours),
    )


def _stats(cands: list[Candidate]) -> CorpusStats:
    df: dict[str, int] = {}
    total = 0
    for c in cands:
        words = terms(c.content)
        total += len(words)
        for t in set(words):
            df[t] = df.get(t, 0) + 1
    return CorpusStats(docs=len(cands), avg_len=total / len(cands), df=df)


def test_relevance_brings_a_weeks_old_fact_to_the_top() -> None:
    cands = [
        _cand(1, "用户答应周末带小猫去看海", importance=0.4, hours=24 * 30),
        *[_cand(i, f"今天聊了第{i}部电影", importance=0.9, hours=1) for i in range(2, 30)],
    ]
    query = query_terms("还记得你答应带小猫去哪里吗")
    ranked = rank(cands, query, _stats(cands), NOW, MemoryWeights())
    assert ranked[0].id == 1
    assert ranked[0].relevance == 1.0
    assert ranked[0].recency == 0.0


def test_without_relevance_importance_and_recency_decide() -> None:
    cands = [_cand(1, "alpha", 0.2, 5), _cand(2, "beta", 0.9, 5), _cand(3, "gamma", 0.2, 0)]
    ranked = rank(cands, query_terms("nothing matches"), _stats(cands), NOW, MemoryWeights())
    # 2 (most important) and 3 (most recent) tie at 1.0; the newer use goes first
    assert [(s.id, s.score) for s in ranked] == [(3, 1.0), (2, 1.0), (1, 0.0)]
    only_recency = MemoryWeights(relevance=0, importance=0, recency=1)
    assert rank(cands, {}, _stats(cands), NOW, only_recency)[0].id == 3


def test_scores_are_min_max_normalised_and_weighted() -> None:
    cands = [_cand(1, "umbrella promise", 1.0, 0), _cand(2, "weather talk", 0.0, 100)]
    assert MemoryWeights().relevance == 3.0  # relevance outweighs importance + recency
    w = MemoryWeights(relevance=2, importance=1, recency=0.5)
    ranked = rank(cands, query_terms("umbrella"), _stats(cands), NOW, w)
    top, bottom = ranked
    assert (top.id, top.relevance, top.importance, top.recency) == (1, 1.0, 1.0, 1.0)
    assert top.score == pytest.approx(3.5)
    assert (bottom.relevance, bottom.importance, bottom.recency, bottom.score) == (0, 0, 0, 0)


def test_semantic_similarity_blends_into_relevance() -> None:
    a = _cand(1, "red apple", 0.5, 1)
    b = _cand(2, "green tree", 0.5, 1)
    a.embedding, b.embedding = [0.0, 1.0], [1.0, 0.0]
    w = MemoryWeights(importance=0, recency=0, semantic_share=1.0)
    ranked = rank([a, b], query_terms("apple"), _stats([a, b]), NOW, w, query_vector=[1.0, 0.1])
    assert ranked[0].id == 2
    assert cosine([1, 0], [1, 0]) == pytest.approx(1.0)
    assert cosine([1, 0], [0, 1]) == 0.0
    assert cosine([1], [1, 2]) == 0.0


def test_rank_of_nothing_is_empty() -> None:
    assert rank([], {}, CorpusStats(0, 1.0, {}), NOW, MemoryWeights()) == []


def test_budget_skips_what_does_not_fit_and_keeps_smaller_later_ones() -> None:
    cands = [_cand(1, "短"), _cand(2, "很长" * 50), _cand(3, "也短")]
    ranked = rank(cands, {}, _stats(cands), NOW, MemoryWeights())
    ranked.sort(key=lambda s: s.id)
    budget = estimate_tokens(memory_line("", "短")) + estimate_tokens(memory_line("", "也短")) + 2
    assert [s.id for s in select_within_budget(ranked, budget, estimate_tokens)] == [1, 3]
    assert select_within_budget(ranked, 0, estimate_tokens) == []


def test_memory_line_flattens_newlines() -> None:
    assert memory_line("生日", "五月\n三日") == "- 生日: 五月 三日"
    assert memory_line("", "x") == "- x"


def test_expiry_grows_with_importance_and_use_and_never_shrinks() -> None:
    current = NOW + timedelta(days=1)
    base = dict(short_days=7.0, long_days=180.0)
    low = extended_expiry("short", 0.0, 0, NOW, current=current, **base)
    high = extended_expiry("short", 1.0, 0, NOW, current=current, **base)
    used = extended_expiry("short", 1.0, 3, NOW, current=current, **base)
    assert low == NOW + timedelta(days=7)
    assert high == NOW + timedelta(days=14)
    assert used == NOW + timedelta(days=56)
    far = NOW + timedelta(days=1000)
    assert extended_expiry("short", 0.0, 0, NOW, current=far, **base) == far
    assert extended_expiry("permanent", 0.5, 1, NOW, current=current, **base) is None
    assert extended_expiry("short", 0.5, 1, NOW, current=None, **base) is None
