"""Full-text search over a scope's memories: BM25 statistics and candidate queries.

The candidates of a turn (:func:`candidate_rows`) come in two statements: the live memories
holding the message's rarest terms (SQLite FTS5 / PostgreSQL ``tsvector``, bounded: see
:mod:`nekoflow.memory.fulltext`), then those best, the most important and the most recently
used; :func:`corpus_stats` reads the exact per-scope term
statistics BM25 needs. Every function reads in the caller's session.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import ARRAY, any_, bindparam, text
from sqlalchemy import select as sa_select
from sqlmodel import Session

from nekoflow.memory.fulltext import (
    best_binds,
    best_ids,
    best_sql,
    id_list,
    id_list_sql,
    shape,
)
from nekoflow.memory.lexical import CorpusStats, scope_token
from nekoflow.memory.semantic import nearest_ids
from nekoflow.storage.dialogue import UTCDateTime
from nekoflow.storage.fastsql import FastStatement, dialect_name
from nekoflow.storage.memory import DOCS, LENGTH, MemoryTermStat

__all__ = [
    "candidate_rows",
    "corpus_stats",
    "corpus_stats_key",
    "corpus_stats_keys",
    "lexical_ids",
    "select_terms",
]


_STATS: Any = MemoryTermStat.__table__  # type: ignore[attr-defined]
_STATS_QUERY = sa_select(_STATS.c.term, _STATS.c.df).where(
    _STATS.c.scope_key == bindparam("key"), _STATS.c.term.in_(bindparam("terms", expanding=True))
)
_STATS_QUERY_PG = FastStatement(
    sa_select(_STATS.c.term, _STATS.c.df).where(
        _STATS.c.scope_key == bindparam("key"),
        _STATS.c.term == any_(bindparam("terms", type_=ARRAY(_STATS.c.term.type))),
    )
)
_STATS_MANY = sa_select(_STATS.c.scope_key, _STATS.c.term, _STATS.c.df).where(
    _STATS.c.scope_key.in_(bindparam("keys", expanding=True)),
    _STATS.c.term.in_(bindparam("terms", expanding=True)),
)
_STATS_MANY_PG = FastStatement(
    sa_select(_STATS.c.scope_key, _STATS.c.term, _STATS.c.df).where(
        _STATS.c.scope_key == any_(bindparam("keys", type_=ARRAY(_STATS.c.scope_key.type))),
        _STATS.c.term == any_(bindparam("terms", type_=ARRAY(_STATS.c.term.type))),
    )
)
"""Built once: constructing the statement per turn cost more than running it. On PostgreSQL
the terms are one array parameter (``= ANY``): one statement text whatever their number."""


def corpus_stats(s: Session, role_id: int, scope_id: str, words: Iterable[str]) -> CorpusStats:
    """BM25 statistics of the scope for these terms (one indexed query)."""
    return corpus_stats_key(s, scope_token(role_id, scope_id), words)


def corpus_stats_key(s: Session, key: str, words: Iterable[str]) -> CorpusStats:
    """BM25 statistics kept under ``key`` (a scope's memories or its rounds) for these terms."""
    return corpus_stats_keys(s, [key], words)[key]


def corpus_stats_keys(
    s: Session, keys: Sequence[str], words: Iterable[str]
) -> dict[str, CorpusStats]:
    """:func:`corpus_stats_key` of several keys (a scope's memories and its rounds) in one
    indexed query."""
    wanted = sorted({w[:64] for w in words} | {DOCS, LENGTH})
    pg = dialect_name(s) == "postgresql"
    found: dict[str, dict[str, int]] = {k: {} for k in keys}
    if len(keys) == 1:
        params: dict[str, Any] = {"key": keys[0], "terms": wanted}
        one: Any = (
            _STATS_QUERY_PG.rows(s, params)
            if pg
            else s.connection().execute(_STATS_QUERY, params).all()  # an expanding IN
        )
        found[keys[0]] = {t: n for t, n in one}
    else:
        params = {"keys": list(keys), "terms": wanted}
        many: Any = (
            _STATS_MANY_PG.rows(s, params)
            if pg
            else s.connection().execute(_STATS_MANY, params).all()
        )
        for key, term, n in many:
            found[key][term] = n
    return {k: _stats(df) for k, df in found.items()}


def _stats(df: dict[str, int]) -> CorpusStats:
    """Statistics from the stored counts (documents and total length under reserved terms)."""
    docs = max(df.pop(DOCS, 0), 0)
    total = max(df.pop(LENGTH, 0), 0)
    return CorpusStats(docs=docs, avg_len=total / docs if docs else 1.0, df=df)


#: The message's own terms a full-text query may hold; context terms only fill what is left.
MAX_TERMS = 16
CONTEXT_TERMS = 4
MATCH_BUDGET = 3000
"""The full-text match set a query may touch (sum of its terms' document frequencies): the
engine ranks every unit holding a chosen term, so the set is bounded by choosing rare terms."""


def select_terms(
    query: Mapping[str, float] | Iterable[str], stats: CorpusStats, budget: int = MATCH_BUDGET
) -> list[str]:
    """The query terms the full-text engine matches: the message's own terms (weight ≥ 1) rarest
    first while the match set they make stays within ``budget`` units (bounded by the sum of
    their document frequencies and by the scope's size; a term in more units than that is never
    matched: it tells none of them apart, and the match set stays bounded); only when none of
    them is in the scope, at most :data:`CONTEXT_TERMS` context terms — context never pushes
    the message's words out (it re-ranks the candidates, lightly, in Python)."""
    weights = query if isinstance(query, Mapping) else dict.fromkeys(query, 1.0)
    own: list[tuple[int, str]] = []
    extra: list[tuple[int, str]] = []
    for w, weight in weights.items():
        df = stats.df.get(w, 0)
        if df > 0:
            (own if weight >= 1.0 else extra).append((df, w))
    own.sort()
    extra.sort()
    chosen: list[str] = []
    total = 0
    for df, w in own[:MAX_TERMS]:
        if min(total + df, stats.docs) > budget:
            break  # even the rarest: a word in that many units tells none of them apart
        chosen.append(w)
        total = min(total + df, max(stats.docs, df))
    if chosen:  # the engine cannot weigh terms: context terms would outrank the message's
        return chosen
    for df, w in extra[:CONTEXT_TERMS]:
        if min(total + df, stats.docs) > budget:
            break
        chosen.append(w)
        total = min(total + df, stats.docs)
    return chosen


def _hit_sql(kinds: Sequence[str]) -> str:
    """:func:`_live_sql` for the full-text hits (alias ``m``), its expiry test written so that
    PostgreSQL does not AND the scope's expiry index (half the scope) into the term lookups."""
    k = ", ".join(f":k{i}" for i in range(len(kinds)))
    return (
        "m.role_id = :r AND m.scope_id = :s AND m.superseded_by IS NULL "
        f"AND m.kind IN ({k}) AND coalesce(m.expires_at > :now, true)"
    )


def _live_sql(alias: str, kinds: Sequence[str]) -> str:
    k = ", ".join(f":k{i}" for i in range(len(kinds)))
    return (
        f"{alias}.role_id = :r AND {alias}.scope_id = :s AND {alias}.superseded_by IS NULL "
        f"AND {alias}.kind IN ({k}) AND ({alias}.expires_at IS NULL OR {alias}.expires_at > :now)"
    )


def _params(role_id: int, scope_id: str, now: datetime, kinds: Sequence[str]) -> dict[str, Any]:
    return {"r": role_id, "s": scope_id, "now": now} | {f"k{i}": k for i, k in enumerate(kinds)}


def lexical_ids(
    s: Session,
    role_id: int,
    scope_id: str,
    words: Iterable[str],
    stats: CorpusStats,
    now: datetime,
    limit: int,
    kinds: Sequence[str] = ("fact",),
) -> list[int]:
    """The ``limit`` live memories best holding the rarest of ``words`` (rarest first while
    the match set stays within :data:`MATCH_BUDGET`), from the database's full-text index."""
    weights = dict.fromkeys(words, 1.0)
    chosen = select_terms(weights, stats)
    if not chosen:
        return []
    scope = scope_token(role_id, scope_id)
    params = _params(role_id, scope_id, now, kinds)
    where = _hit_sql(kinds)
    return best_ids(s, "memory", scope, chosen, stats, weights, where, params, limit)


def candidate_rows(
    s: Session,
    role_id: int,
    scope_id: str,
    words: Iterable[str],
    stats: CorpusStats,
    now: datetime,
    *,
    limit: int,
    pool: int,
    kinds: Sequence[str],
    columns: Sequence[Any],
    semantic: int = 0,
    model: str | None = None,
    summaries: int = 0,
    query_vector: Sequence[float] | None = None,
    semantic_budget: int = 0,
) -> list[Any]:
    """In one statement: ``columns`` of the live memories best holding the rarest of ``words``
    (:func:`nekoflow.memory.fulltext.best_sql`), plus the ``pool`` most important and ``pool``
    most recently used, plus (with ``model`` and ``query_vector``) the ``limit`` nearest to
    the query's vector among the scope's newest ``semantic`` embedded by that model within
    ``semantic_budget`` multiplications (:mod:`nekoflow.memory.semantic`), plus the
    ``summaries`` newest current summaries."""
    dialect = s.get_bind().dialect.name
    params = _params(role_id, scope_id, now, kinds) | {"p": pool}
    parts: list[str] = []
    weights = words if isinstance(words, Mapping) else dict.fromkeys(words, 1.0)
    chosen = select_terms(weights, stats)
    if chosen:
        # The full-text candidates as a subquery of the one statement (a round trip less).
        scope = scope_token(role_id, scope_id)
        params |= best_binds(dialect, scope, chosen, stats, weights, limit)
        parts.append(best_sql(dialect, "memory", shape(dialect, len(chosen)), _hit_sql(kinds)))
    if pool:
        parts.append(
            f"SELECT i.id FROM memory_record i WHERE {_live_sql('i', kinds)} "
            "ORDER BY i.importance DESC, i.created_at DESC LIMIT :p"
        )
        parts.append(
            f"SELECT u.id FROM memory_record u WHERE {_live_sql('u', kinds)} "
            "AND u.last_accessed_at IS NOT NULL ORDER BY u.last_accessed_at DESC LIMIT :p"
        )
    if semantic and model and query_vector:
        near = nearest_ids(
            s,
            query_vector,
            model,
            _hit_sql(kinds),
            _params(role_id, scope_id, now, kinds),
            limit=limit,
            budget=semantic_budget,
            cap=semantic,
        )
        params["sv"] = id_list(dialect, near)
        parts.append(id_list_sql(dialect, "sv"))
    if summaries:
        params["sm"] = summaries
        parts.append(
            "SELECT h.id FROM memory_record h WHERE h.role_id = :r AND h.scope_id = :s "
            "AND h.kind = 'summary' AND h.superseded_by IS NULL ORDER BY h.id DESC LIMIT :sm"
        )
    if not parts:
        return []
    ids = " UNION ".join(f"SELECT id FROM ({p}) AS c{i}" for i, p in enumerate(parts))
    names = ", ".join(f"memory_record.{c.key}" for c in columns)
    sql = f"SELECT {names} FROM memory_record WHERE memory_record.id IN ({ids})"
    stmt, row = _candidates(sql, tuple(columns))
    return [row._make(values) for values in stmt.rows(s, params)]


@lru_cache(maxsize=64)
def _candidates(sql: str, columns: tuple[Any, ...]) -> tuple[FastStatement, Any]:
    """The candidates statement of one shape, built once, and its row type (attributes named
    as the columns)."""
    stmt = text(sql).bindparams(bindparam("now", type_=UTCDateTime())).columns(*columns)
    return FastStatement(stmt), namedtuple("MemoryRow", [c.key for c in columns])  # type: ignore[misc]
