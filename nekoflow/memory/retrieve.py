"""SQL shell of retrieval: a turn's candidate memories, their scores, summaries and the block.

Candidates are the scope's live memories holding the message's rarest terms (the database's
full-text index), plus its most important and most recently used ones; they are scored by the
pure :func:`nekoflow.memory.scoring.rank` and kept while they fit the token budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlmodel import Session, col, select

from nekoflow.memory.embeddings import unpack
from nekoflow.memory.lexical import query_terms
from nekoflow.memory.scoring import Candidate, Scored, memory_line, rank, select_within_budget
from nekoflow.memory.search import candidate_rows, corpus_stats
from nekoflow.memory.settings import MemorySettings
from nekoflow.memory.store import RETRIEVED
from nekoflow.memory.window import memory_block
from nekoflow.storage.turns import MemoryRecord
from nekoflow.tokens import estimate_tokens

__all__ = ["PromptMemories", "PromptMemory", "prompt_memories", "retrieve", "summaries"]


class PromptMemory(BaseModel):
    """A memory or summary that went into a turn's prompt: id, kind and score parts only."""

    id: int
    kind: str
    score: float | None = None
    relevance: float | None = None
    importance: float | None = None
    recency: float | None = None


@dataclass(slots=True)
class PromptMemories:
    """The memories section of a turn's prompt and what went into it."""

    block: str = ""
    used: list[PromptMemory] = field(default_factory=list)
    tokens: int = 0
    #: The retrieved facts themselves (what :func:`nekoflow.memory.store.touch` marks as used).
    chosen: list[Scored] = field(default_factory=list)


_COLUMNS: tuple[Any, ...] = (
    MemoryRecord.id,
    MemoryRecord.title,
    MemoryRecord.content,
    MemoryRecord.importance,
    MemoryRecord.terms,
    MemoryRecord.created_at,
    MemoryRecord.updated_at,
    MemoryRecord.last_accessed_at,
    MemoryRecord.ttl,
    MemoryRecord.expires_at,
    MemoryRecord.access_count,
    MemoryRecord.mentions,
    MemoryRecord.kind,
)


def _candidate(row: Any, model: str | None = None) -> Candidate:
    embedding = None
    if model is not None and getattr(row, "embedding_model", None) == model:
        embedding = unpack(row.embedding)
    times = [t for t in (row.created_at, row.updated_at, row.last_accessed_at) if t is not None]
    return Candidate(
        id=row.id,
        title=row.title,
        content=row.content,
        importance=row.importance,
        terms=row.terms,
        last_used=max(times),
        embedding=embedding,
        ttl=row.ttl,
        expires_at=row.expires_at,
        uses=(row.access_count or 0) + max((row.mentions or 1) - 1, 0),
        kind=row.kind,
    )


def retrieve(
    s: Session,
    *,
    role_id: int,
    scope_id: str,
    message: str,
    context: Sequence[str],
    now: datetime,
    settings: MemorySettings,
    query_vector: Sequence[float] | None = None,
    embeddings_model: str | None = None,
    exclude: Sequence[int] = (),
) -> list[Scored]:
    """The scope's candidate facts and summaries for this message, best first (``exclude``:
    ids already in the prompt, e.g. the newest summaries; ``query_vector``: the message's
    embedding by ``embeddings_model``, blended with the lexical relevance)."""
    model = embeddings_model if query_vector else None
    query = query_terms(message, context)
    stats = corpus_stats(s, role_id, scope_id, query)
    table: Any = MemoryRecord.__table__
    columns = [table.c[c.key] for c in _COLUMNS]
    if model is not None:
        columns += [table.c.embedding, table.c.embedding_model]
    rows = candidate_rows(
        s,
        role_id,
        scope_id,
        query,
        stats,
        now,
        limit=settings.candidates,
        pool=settings.pool,
        kinds=RETRIEVED,
        columns=columns,
        semantic=settings.semantic_scan,
        model=model,
    )
    skip = set(exclude)
    candidates = [_candidate(r, model) for r in rows if r.id not in skip]
    return rank(candidates, query, stats, now, settings.weights, query_vector)


def summaries(s: Session, role_id: int, scope_id: str, budget: int) -> list[tuple[int, str]]:
    """The newest summaries of the scope that fit ``budget`` tokens, oldest first."""
    if budget <= 0:
        return []
    rows = s.exec(
        select(MemoryRecord.id, MemoryRecord.content)
        .where(
            col(MemoryRecord.role_id) == role_id,
            col(MemoryRecord.scope_id) == scope_id,
            col(MemoryRecord.kind) == "summary",
            col(MemoryRecord.superseded_by).is_(None),
        )
        .order_by(col(MemoryRecord.id).desc())
        .limit(64)
    ).all()
    chosen: list[tuple[int, str]] = []
    used = 0
    for mid, content in rows:
        cost = estimate_tokens(memory_line("[往事]", content)) + 1
        if used + cost > budget:
            break
        chosen.append((mid, content))
        used += cost
    chosen.reverse()
    return chosen


def prompt_memories(
    s: Session,
    *,
    role_id: int,
    scope_id: str,
    message: str,
    context: Sequence[str],
    now: datetime,
    settings: MemorySettings,
    query_vector: Sequence[float] | None = None,
    embeddings_model: str | None = None,
) -> PromptMemories:
    """Summaries of the distant past + the retrieved memories that fit their token budgets."""
    past = summaries(s, role_id, scope_id, settings.summary_tokens)
    ranked = retrieve(
        s,
        role_id=role_id,
        scope_id=scope_id,
        message=message,
        context=context,
        now=now,
        settings=settings,
        query_vector=query_vector,
        embeddings_model=embeddings_model,
        exclude=[i for i, _ in past],
    )
    chosen = select_within_budget(ranked, settings.prompt_tokens, estimate_tokens)
    block = memory_block([(str(i), text) for i, text in past], chosen)
    used = [PromptMemory(id=i, kind="summary") for i, _ in past] + [
        PromptMemory(
            id=m.id,
            kind=m.candidate.kind,
            score=round(m.score, 4),
            relevance=round(m.relevance, 4),
            importance=round(m.importance, 4),
            recency=round(m.recency, 4),
        )
        for m in chosen
    ]
    return PromptMemories(block=block, used=used, tokens=estimate_tokens(block), chosen=chosen)
