"""SQL shell of retrieval: a turn's candidate memories, their scores, summaries and the block.

Candidates are the scope's live memories holding the message's rarest terms (the database's
full-text index), plus its most important and most recently used ones; they are scored by the
pure :func:`nekoflow.memory.scoring.rank` and kept while they fit the token budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlmodel import Session

from nekoflow.memory.embeddings import unpack
from nekoflow.memory.fact_memory import read_fact
from nekoflow.memory.fact_updates import notes_for_each, stated_facts
from nekoflow.memory.lexical import CorpusStats, query_terms, scope_token
from nekoflow.memory.round_rank import CONTEXT_WEIGHT, ranked_rounds, rounds_within
from nekoflow.memory.rounds import RoundRow
from nekoflow.memory.scoring import (
    Candidate,
    Scored,
    memory_line,
    prompt_line,
    rank,
    select_within_budget,
)
from nekoflow.memory.search import candidate_rows, corpus_stats, corpus_stats_keys
from nekoflow.memory.settings import MemorySettings
from nekoflow.memory.store import RETRIEVED
from nekoflow.memory.window import memory_block
from nekoflow.storage.memory import round_stats_key
from nekoflow.storage.turns import MemoryRecord
from nekoflow.tokens import estimate_tokens

__all__ = ["PromptMemories", "PromptMemory", "prompt_memories", "retrieve"]


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
    #: The past rounds shown, best first.
    rounds: list[RoundRow] = field(default_factory=list)


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


_TABLE: Any = MemoryRecord.__table__
#: How many of the newest summaries a prompt considers.
SUMMARY_SCAN = 64


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


def _gather(
    s: Session,
    *,
    role_id: int,
    scope_id: str,
    message: str,
    context: Sequence[str],
    now: datetime,
    settings: MemorySettings,
    model: str | None,
    summaries: int = 0,
    stats: CorpusStats | None = None,
    query_vector: Sequence[float] | None = None,
    query: dict[str, float] | None = None,
) -> tuple[list[Any], dict[str, float], CorpusStats]:
    """The candidate rows (and the ``summaries`` newest summaries), with the query's term
    weights (made unless given) and the scope's BM25 statistics (read unless given)."""
    if query is None:
        query = query_terms(message, context, CONTEXT_WEIGHT)
    if stats is None:
        stats = corpus_stats(s, role_id, scope_id, query)
    columns = [_TABLE.c[c.key] for c in _COLUMNS]
    if model is not None:
        columns += [_TABLE.c.embedding, _TABLE.c.embedding_model]
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
        summaries=summaries,
        query_vector=query_vector,
        semantic_budget=settings.semantic_budget,
    )
    return rows, query, stats


def _ranked(
    rows: Sequence[Any],
    query: dict[str, float],
    stats: CorpusStats,
    now: datetime,
    settings: MemorySettings,
    query_vector: Sequence[float] | None,
    model: str | None,
    skip: set[int],
) -> list[Scored]:
    """The live candidate rows not in ``skip``, ranked by the message's own terms (context
    terms found candidates; they never outweigh the message's words)."""
    own = {t: w for t, w in query.items() if w >= 1.0}
    query = own or query
    candidates = [
        _candidate(r, model)
        for r in rows
        if r.id not in skip and (r.expires_at is None or r.expires_at > now)
    ]
    return rank(candidates, query, stats, now, settings.weights, query_vector)


def _retrieve(
    s: Session,
    *,
    role_id: int,
    scope_id: str,
    message: str,
    context: Sequence[str],
    now: datetime,
    settings: MemorySettings,
    query_vector: Sequence[float] | None,
    embeddings_model: str | None,
    exclude: Sequence[int] = (),
    summary_budget: int = 0,
    stats: CorpusStats | None = None,
    query: dict[str, float] | None = None,
) -> tuple[list[tuple[int, str]], list[Scored]]:
    """The newest summaries that fit ``summary_budget`` tokens (oldest first) and the other
    candidates, ranked — read together in one statement."""
    model = embeddings_model if query_vector else None
    scan = SUMMARY_SCAN if summary_budget > 0 else 0
    rows, query, stats = _gather(
        s,
        role_id=role_id,
        scope_id=scope_id,
        message=message,
        context=context,
        now=now,
        settings=settings,
        model=model,
        summaries=scan,
        stats=stats,
        query_vector=query_vector,
        query=query,
    )
    newest = [(r.id, r.content) for r in rows if r.kind == "summary"] if scan else []
    past = _newest_within(newest, summary_budget)
    skip = set(exclude) | {i for i, _ in past}
    return past, _ranked(rows, query, stats, now, settings, query_vector, model, skip)


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
    return _retrieve(
        s,
        role_id=role_id,
        scope_id=scope_id,
        message=message,
        context=context,
        now=now,
        settings=settings,
        query_vector=query_vector,
        embeddings_model=embeddings_model,
        exclude=exclude,
    )[1]


def _newest_within(summary_rows: Sequence[tuple[int, str]], budget: int) -> list[tuple[int, str]]:
    """Of (id, content) summaries, the newest that fit ``budget`` tokens, oldest first."""
    chosen: list[tuple[int, str]] = []
    used = 0
    for mid, content in sorted(summary_rows, key=lambda r: -r[0])[:SUMMARY_SCAN]:
        cost = estimate_tokens(memory_line("[往事]", content)) + 1
        if used + cost > budget:
            break
        chosen.append((mid, content))
        used += cost
    chosen.reverse()
    return chosen


def _with_notes(
    s: Session,
    role_id: int,
    scope_id: str,
    rounds: list[tuple[RoundRow, str]],
    chosen: list[Scored],
    now: datetime,
) -> tuple[list[tuple[RoundRow, str]], list[Scored]]:
    """The shown rounds and memories, each stating a fact whose value has changed since with a
    dated note of the current value beside it (an old value never reaches the prompt alone);
    one query for all. Fact memories of a slot carry their history already, summaries their
    notes from the summary task."""
    plain = [
        m.candidate.kind != "summary" and read_fact(m.candidate.title, m.candidate.content) is None
        for m in chosen
    ]
    groups = [stated_facts(r.user_text) for r, _ in rounds]
    groups += [
        stated_facts(m.candidate.content) if p else () for m, p in zip(chosen, plain, strict=True)
    ]
    if not any(groups):
        return rounds, chosen
    notes = notes_for_each(s, role_id, scope_id, groups, now)
    shown = [
        (r, f"{line} {n}" if n else line)
        for (r, line), n in zip(rounds, notes[: len(rounds)], strict=True)
    ]
    kept = [
        replace(m, candidate=replace(m.candidate, content=f"{m.candidate.content} {n}")) if n else m
        for m, n in zip(chosen, notes[len(rounds) :], strict=True)
    ]
    return shown, kept


def _within(
    rounds: list[tuple[RoundRow, str]], chosen: list[Scored], budget: int
) -> tuple[list[tuple[RoundRow, str]], list[Scored]]:
    """The rounds and memories (notes included) cut to ``budget`` tokens together: the
    lowest-ranked memory, then round, goes first."""
    costs = [estimate_tokens(line) + 1 for _, line in rounds]
    mems = [estimate_tokens(prompt_line(m.candidate)) + 1 for m in chosen]
    while chosen and sum(costs) + sum(mems) > budget:
        chosen, mems = chosen[:-1], mems[:-1]
    while rounds and sum(costs) > budget:
        rounds, costs = rounds[:-1], costs[:-1]
    return rounds, chosen


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
    below_line: int | None = None,
) -> PromptMemories:
    """Summaries of the distant past + the retrieved memories + the relevant past rounds (not
    those from line ``below_line`` on: the recent window shows them), within token budgets:
    rounds take at most ``round_share`` of ``prompt_tokens``, memories the rest."""
    # The BM25 statistics of the scope's memories and of its rounds, in one query (the rounds'
    # query terms are among the message's).
    keys = [scope_token(role_id, scope_id), round_stats_key(scope_token(role_id, scope_id))]
    query = query_terms(message, context, CONTEXT_WEIGHT)
    both = corpus_stats_keys(s, keys, query)
    past, ranked = _retrieve(
        s,
        role_id=role_id,
        scope_id=scope_id,
        message=message,
        context=context,
        now=now,
        settings=settings,
        query_vector=query_vector,
        embeddings_model=embeddings_model,
        summary_budget=settings.summary_tokens,
        stats=both[keys[0]],
        query=query,
    )
    rounds = rounds_within(
        ranked_rounds(
            s,
            role_id=role_id,
            scope_id=scope_id,
            message=message,
            context=context,
            now=now,
            settings=settings,
            below_line=below_line,
            stats=both[keys[1]],
            query=query,
        ),
        int(settings.prompt_tokens * settings.round_share),
    )
    spent = sum(estimate_tokens(line) + 1 for _, line in rounds)
    chosen = select_within_budget(ranked, settings.prompt_tokens - spent, estimate_tokens)
    rounds, chosen = _with_notes(s, role_id, scope_id, rounds, chosen, now)
    rounds, chosen = _within(rounds, chosen, settings.prompt_tokens)
    block = memory_block([(str(i), text) for i, text in past], chosen, [line for _, line in rounds])
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
    used += [PromptMemory(id=r.id, kind="round") for r, _ in rounds]
    return PromptMemories(
        block=block,
        used=used,
        tokens=estimate_tokens(block),
        chosen=chosen,
        rounds=[r for r, _ in rounds],
    )
