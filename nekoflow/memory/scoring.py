"""Which memories go into a turn's prompt: the Generative Agents score and a token budget.

score = w_rel · relevance + w_imp · importance + w_rec · recency, each min-max normalised over
the candidates; relevance is BM25 over index terms (hybrid with embedding cosine similarity when
both sides have vectors); recency = ``decay_per_hour`` ** hours since the memory was last used
(or last stated). Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from operator import mul

from pydantic import BaseModel, Field

from nekoflow.memory.concepts import OTHER_TOKENS
from nekoflow.memory.lexical import CorpusStats, bm25_scorer, doc_terms

__all__ = [
    "Candidate",
    "MemoryWeights",
    "Scored",
    "cosine",
    "extended_expiry",
    "memory_line",
    "prompt_line",
    "rank",
    "select_within_budget",
]


class MemoryWeights(BaseModel):
    """The weights of the retrieval score and the recency decay (settings ``memory_w_*``)."""

    relevance: float = Field(default=3.0, ge=0)
    importance: float = Field(default=1.0, ge=0)
    recency: float = Field(default=1.0, ge=0)
    decay_per_hour: float = Field(default=0.995, gt=0, le=1)
    #: Share of the relevance taken by embedding similarity when vectors exist (0..1).
    semantic_share: float = Field(default=0.5, ge=0, le=1)


@dataclass(slots=True)
class Candidate:
    """A memory that may go into the prompt, with what its score needs."""

    id: int
    title: str
    content: str
    importance: float
    terms: str | None
    last_used: datetime
    kind: str = "fact"
    #: Unit-length vector of the memory (``embeddings.pack``), when the configured model made one.
    embedding: Sequence[float] | None = None
    #: What a use of the memory changes (its expiry): ttl, current expiry, past uses.
    ttl: str = "permanent"
    expires_at: datetime | None = None
    uses: int = 0


@dataclass(frozen=True, slots=True)
class Scored:
    """A ranked memory: total score and its normalised parts (ids and numbers only)."""

    id: int
    score: float
    relevance: float
    importance: float
    recency: float
    candidate: Candidate = field(repr=False, compare=False)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0 when either is zero or they differ in length)."""
    if len(a) != len(b) or not a:
        return 0.0
    dot = sum(map(mul, a, b))
    na = math.sqrt(sum(map(mul, a, a)))
    nb = math.sqrt(sum(map(mul, b, b)))
    return dot / (na * nb) if na and nb else 0.0


def _unit(v: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(map(mul, v, v)))
    return [x / norm for x in v] if norm else list(v)


def _minmax(values: list[float]) -> list[float]:
    lo, hi = min(values), max(values)
    if hi - lo <= 1e-12:
        return [1.0 if hi > 0 else 0.0] * len(values)
    return [(v - lo) / (hi - lo) for v in values]


OTHERS_PENALTY = 0.5
"""How much of its lexical score a memory about someone the message does not ask about keeps."""


def _about(
    scorer: Callable[[list[str]], float], terms: list[str], asked_of: frozenset[str]
) -> float:
    """A memory's BM25 score; halved when it is about a relative or pet the message does not
    name ("我叫什么名字?" asks of the user: 用户的猫的名字 is about the cat)."""
    score = scorer(terms)
    others = OTHER_TOKENS.intersection(terms)
    return score * OTHERS_PENALTY if others and not others & asked_of else score


def rank(
    candidates: Sequence[Candidate],
    query: Mapping[str, float],
    stats: CorpusStats,
    now: datetime,
    weights: MemoryWeights,
    query_vector: Sequence[float] | None = None,
) -> list[Scored]:
    """The candidates by descending score (ties: newer use first, then higher id)."""
    if not candidates:
        return []
    scorer = bm25_scorer(query, stats)
    asked_of = OTHER_TOKENS.intersection(query)
    lexical = _minmax([_about(scorer, doc_terms(c.terms), asked_of) for c in candidates])
    relevance = lexical
    if query_vector and any(c.embedding for c in candidates):
        # Stored vectors are unit-length (``embeddings.pack``): the cosine is a dot product.
        q = _unit(query_vector)
        semantic = _minmax(
            [
                max(sum(map(mul, q, c.embedding)), 0.0)
                if c.embedding and len(c.embedding) == len(q)
                else 0.0
                for c in candidates
            ]
        )
        share = weights.semantic_share
        relevance = [
            (1 - share) * lx + share * sm for lx, sm in zip(lexical, semantic, strict=True)
        ]
    importance = _minmax([c.importance for c in candidates])
    hours = [max((now - c.last_used).total_seconds() / 3600.0, 0.0) for c in candidates]
    recency = _minmax([weights.decay_per_hour**h for h in hours])
    scored = [
        Scored(
            id=c.id,
            score=weights.relevance * rel + weights.importance * imp + weights.recency * rec,
            relevance=rel,
            importance=imp,
            recency=rec,
            candidate=c,
        )
        for c, rel, imp, rec in zip(candidates, relevance, importance, recency, strict=True)
    ]
    scored.sort(key=lambda s: (-s.score, -s.candidate.last_used.timestamp(), -s.id))
    return scored


def memory_line(title: str, content: str) -> str:
    """A memory as one prompt line: ``- title: content`` (newlines flattened)."""
    text = f"- {title}: {content}" if title else f"- {content}"
    return text.replace("\n", " ")


def prompt_line(c: Candidate) -> str:
    """A retrieved memory's line in the prompt (a summary is marked as the past)."""
    return memory_line("[往事]" if c.kind == "summary" else c.title, c.content)


def select_within_budget(
    ranked: Sequence[Scored], budget: int, count: Callable[[str], int]
) -> list[Scored]:
    """The best-ranked memories whose lines fit ``budget`` tokens together (a line that does not
    fit is skipped, a smaller later one may still fit; the search ends once fewer than 4 tokens
    are left, or after 16 lines in a row did not fit)."""
    chosen: list[Scored] = []
    used = 0
    misses = 0
    for s in ranked:
        if budget - used < 4 or misses >= 16:
            break
        cost = count(prompt_line(s.candidate)) + 1
        if used + cost > budget:
            misses += 1
            continue
        chosen.append(s)
        used += cost
        misses = 0
    return chosen


def extended_expiry(
    ttl: str,
    importance: float,
    uses: int,
    now: datetime,
    *,
    short_days: float,
    long_days: float,
    current: datetime | None,
) -> datetime | None:
    """A memory's expiry after it was used or restated: ``now`` + its ttl stretched by importance
    and use (× (1 + importance) × (1 + uses), uses capped at 8), never earlier than ``current``;
    None (never) for ``permanent`` or an already permanent memory."""
    if ttl == "permanent" or current is None:
        return None
    base = long_days if ttl == "long" else short_days
    days = base * (1.0 + max(importance, 0.0)) * (1 + min(max(uses, 0), 8))
    return max(current, now + timedelta(days=days))
