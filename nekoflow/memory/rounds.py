"""Past rounds as retrieval units: indexed as a turn's lines are written, found by the database's
full text, hidden when a fact they stated is forgotten.

A round is the user's line(s) of one turn and the reply, dated. Its ``terms`` (the scope token,
then the lexical terms of the user's words — :func:`nekoflow.memory.lexical.index_text`) are
indexed by SQLite FTS5 / a PostgreSQL ``tsvector`` (``nekoflow.storage.memory``), and counted in
the scope's round term statistics so BM25 has exact per-scope figures. Every function works in
the caller's session and transaction.
"""

from __future__ import annotations

from collections import Counter, namedtuple
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import bindparam, insert, text, update
from sqlmodel import Session

from nekoflow.memory.fulltext import best_binds, best_sql, shape
from nekoflow.memory.lexical import CorpusStats, doc_terms, index_text, scope_token, terms
from nekoflow.memory.search import corpus_stats_key, select_terms
from nekoflow.memory.timeq import TimeRange
from nekoflow.storage.dialogue import UTCDateTime
from nekoflow.storage.fastsql import FastStatement, dialect_name
from nekoflow.storage.memory import DOCS, LENGTH, MemoryRound, round_stats_key

__all__ = [
    "RoundRow",
    "hide_rounds",
    "index_round",
    "round_candidates",
    "round_stats",
]

_TABLE: Any = MemoryRound.__table__  # type: ignore[attr-defined]
_COLUMNS = (
    "role_id",
    "scope_id",
    "save_id",
    "turn_id",
    "line_id",
    "created_at",
    "user_text",
    "reply_text",
    "terms",
)
_INSERT = FastStatement(
    insert(_TABLE).values({c: bindparam(c, type_=_TABLE.c[c].type) for c in _COLUMNS})
)
"""One round (built once)."""
#: A round's reply is cut to this many characters in the index row (the prompt shows less).
REPLY_CHARS = 200

RoundRow = namedtuple(
    "RoundRow", ["id", "line_id", "turn_id", "created_at", "user_text", "reply_text", "terms"]
)
"""A candidate round as retrieval reads it."""


def index_round(
    s: Session,
    *,
    role_id: int,
    scope_id: str,
    save_id: int,
    turn_id: str,
    line_id: int,
    at: datetime,
    user_text: str,
    reply_text: str,
) -> None:
    """Store one round and count its terms (two statements; nothing for an empty user text)."""
    if not user_text.strip():
        return
    terms = index_text(role_id, scope_id, "", user_text)
    values = {
        "role_id": role_id,
        "scope_id": scope_id,
        "save_id": save_id,
        "turn_id": turn_id,
        "line_id": line_id,
        "created_at": at,
        "user_text": user_text,
        "reply_text": reply_text[:REPLY_CHARS],
        "terms": terms,
    }
    words = doc_terms(terms)
    key = round_stats_key(scope_token(role_id, scope_id))
    delta: Counter[tuple[str, str]] = Counter({(key, DOCS): 1, (key, LENGTH): len(words)})
    for w in set(words):
        delta[(key, w[:64])] += 1
    if dialect_name(s) == "postgresql":  # the round and its term counts in ONE statement
        rows = sorted(delta.items())
        _index_pg().rows(
            s,
            values
            | {
                "p_keys": [k for (k, _), _ in rows],
                "p_terms": [t for (_, t), _ in rows],
                "p_dfs": [n for _, n in rows],
            },
        )
        return
    from nekoflow.memory.store import apply_stats  # the memories' upsert (one statement)

    _INSERT.rows(s, values)
    apply_stats(s, delta)


@cache
def _index_pg() -> FastStatement:
    """PostgreSQL: insert a round and add its terms to the statistics, in one statement."""
    names = ", ".join(_COLUMNS)
    binds = ", ".join(f":{c}" for c in _COLUMNS)
    sql = (
        f"WITH r AS (INSERT INTO memory_round ({names}) VALUES ({binds})) "
        "INSERT INTO memory_term_stat (scope_key, term, df) "
        "SELECT * FROM unnest(CAST(:p_keys AS VARCHAR[]), CAST(:p_terms AS VARCHAR[]), "
        "CAST(:p_dfs AS INTEGER[])) "
        "ON CONFLICT (scope_key, term) DO UPDATE SET df = memory_term_stat.df + excluded.df"
    )
    return FastStatement(
        text(sql).bindparams(bindparam("created_at", type_=UTCDateTime())).columns()
    )


def round_stats(s: Session, role_id: int, scope_id: str, words: Any) -> CorpusStats:
    """BM25 statistics of the scope's rounds for these terms (one indexed query)."""
    return corpus_stats_key(s, round_stats_key(scope_token(role_id, scope_id)), words)


def hide_rounds(s: Session, role_id: int, scope_id: str, turn_ids: Sequence[str]) -> int:
    """Hide the scope's rounds of these turns from retrieval (a fact they stated was forgotten)."""
    ids = sorted({t for t in turn_ids if t})
    if not ids:
        return 0
    stmt = (
        update(_TABLE)
        .where(
            _TABLE.c.role_id == role_id,
            _TABLE.c.scope_id == scope_id,
            _TABLE.c.turn_id.in_(ids),
        )
        .values(hidden=1)
    )
    result: Any = s.execute(stmt)
    return int(result.rowcount or 0)


_WHERE = "m.role_id = :r AND m.scope_id = :s AND m.hidden = 0 AND m.line_id < :below"
_DATED = " AND m.created_at >= :t0 AND m.created_at < :t1"
_COLS = "m.id, m.line_id, m.turn_id, m.created_at, m.user_text, m.reply_text, m.terms"


@cache
def _best_rounds_sql(dialect: str, n: int, dated: bool) -> Any:
    """The rounds :func:`nekoflow.memory.fulltext.best_sql` picks, read in the same statement."""
    best = best_sql(dialect, "round", n, _WHERE + (_DATED if dated else ""))
    return _statement(f"SELECT {_COLS} FROM memory_round m WHERE m.id IN ({best})")


def _matched(
    s: Session,
    scope: str,
    chosen: Sequence[str],
    stats: CorpusStats,
    weights: Mapping[str, float],
    params: dict[str, Any],
    *,
    dated: bool,
) -> list[RoundRow]:
    """The scope's visible rounds best holding the ``chosen`` terms (optionally within
    ``[:t0, :t1)``), in one statement: :mod:`nekoflow.memory.fulltext`'s bounded candidates
    (in no order: the caller ranks them)."""
    if not chosen or params["n"] <= 0:
        return []
    dialect = dialect_name(s)
    binds = params | best_binds(dialect, scope, chosen, stats, weights, params["n"])
    stmt = _best_rounds_sql(dialect, shape(dialect, len(chosen)), dated)
    return [RoundRow._make(r) for r in stmt.rows(s, binds)]


@cache
def _dated_sql() -> Any:
    """The scope's visible rounds within ``[:t0, :t1)``, newest first (a message naming a time
    and nothing else to match)."""
    return _statement(
        "SELECT m.id, m.line_id, m.turn_id, m.created_at, m.user_text, m.reply_text, m.terms "
        "FROM memory_round m WHERE m.role_id = :r AND m.scope_id = :s AND m.hidden = 0 "
        "AND m.line_id < :below AND m.created_at >= :t0 AND m.created_at < :t1 "
        "ORDER BY m.created_at DESC, m.id DESC LIMIT :n"
    )


def _statement(sql: str) -> FastStatement:
    """``sql`` with its time binds and result columns typed (dates read back as UTC)."""
    stmt = text(sql)
    if ":t0" in sql:
        stmt = stmt.bindparams(
            bindparam("t0", type_=UTCDateTime()), bindparam("t1", type_=UTCDateTime())
        )
    cols = [_TABLE.c[name] for name in RoundRow._fields]
    return FastStatement(stmt.columns(*cols))


def round_candidates(
    s: Session,
    role_id: int,
    scope_id: str,
    query: Mapping[str, float],
    stats: CorpusStats,
    *,
    limit: int,
    budget: int,
    below_line: int | None = None,
    when: TimeRange | None = None,
    refers_back: timedelta | None = None,
    wide: Mapping[str, float] | None = None,
    now: datetime | None = None,
) -> list[RoundRow]:
    """The scope's rounds best matching ``query`` by the engine's relevance over ALL its rounds
    (the terms chosen by :func:`nekoflow.memory.search.select_terms` within ``budget`` matches),
    only rounds before line ``below_line``; with ``when``, the rounds in that range first (those
    matching, else the newest of the range), and with ``refers_back`` the rounds said up to that
    long after the range holding its time words (the caller checks what they refer to; none
    when the range ends after ``now``: nothing was said after it yet), then the best matches of
    any date for ``wide`` (the whole message's terms, time words included) when given, else for
    ``query``."""
    params: dict[str, Any] = {
        "r": role_id,
        "s": scope_id,
        "n": limit,
        "below": below_line if below_line is not None else 2**31 - 1,
    }
    scope = scope_token(role_id, scope_id)
    chosen = select_terms(query, stats, budget)
    out: dict[int, RoundRow] = {}
    if when is not None:
        params |= {"t0": when.start, "t1": when.end}
        if chosen:
            rows = _matched(s, scope, chosen, stats, query, params, dated=True)
            out.update((r.id, r) for r in rows)
        if not out:
            out.update((r[0], RoundRow._make(r)) for r in _dated_sql().rows(s, params))
        if refers_back is not None and (now is None or when.end < now):
            said = [t for t in terms(when.words) if len(t) > 1]
            later = params | {"t0": when.end, "t1": when.end + refers_back}
            for r in _matched(s, scope, said, stats, {}, later, dated=True):
                out.setdefault(r.id, r)
    if wide is not None:
        query, chosen = wide, select_terms(wide, stats, budget)
    if chosen:
        for r in _matched(s, scope, chosen, stats, query, params, dated=False):
            out.setdefault(r.id, r)
    return list(out.values())
