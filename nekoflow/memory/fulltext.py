"""The full-text candidates of a scope, bounded: which units hold which of the chosen terms.

The engine's own ranking is not used for candidate selection: FTS5's ``bm25()`` counts every
unit holding each phrase of the query on every call — the scope token's phrase is every unit of
the scope, so a query over a 100,000-memory scope paid for all of them — and PostgreSQL's
``ts_rank`` reads each matched row's ``tsvector``. Instead one statement lists, per chosen term
(at most :data:`nekoflow.memory.search.MATCH_BUDGET` units in all, known from the exact
per-scope statistics before the query), the live units of the scope holding it — an index
lookup each, no ranking per unit — scores each unit by the summed idf of the terms it holds
(BM25 without term frequency and length: the final ranking in Python counts them) and keeps
the best, the shortest then the newest first among equals (:func:`best_ids`). Every unit of
the scope holding a chosen term competes, however old. Every function reads in the caller's session.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from sqlalchemy import Integer, bindparam, column, text
from sqlmodel import Session

from nekoflow.memory.lexical import CorpusStats
from nekoflow.storage.dialogue import UTCDateTime
from nekoflow.storage.fastsql import FastStatement, dialect_name

__all__ = ["best_binds", "best_ids", "best_sql", "id_list", "id_list_sql", "shape"]

_TABLES = {"memory": ("memory_record", "memory_fts"), "round": ("memory_round", "round_fts")}


def _term_query(dialect: str, scope: str, term: str) -> str:
    """The engine's query for one term within the scope (PostgreSQL: the term alone, the scope
    is the ``where`` filter's)."""
    if dialect == "sqlite":
        return f'"{scope}" AND "{term}"'
    return f"'{term}'"


#: A unit's size in bytes (read from the row's header: its text is not loaded).
_SIZE = {"sqlite": "length(CAST(m.terms AS BLOB))", "postgresql": "octet_length(m.terms)"}


@cache
def best_sql(dialect: str, kind: str, n: int, where: str) -> str:
    """SQL of the ``:limit`` units passing ``where`` (alias ``m``) with the highest sum of the
    weights over the terms they hold (SQLite: ``:w<i>``/``:q<i>``, ``i`` < ``n``; PostgreSQL:
    the arrays ``:ws``/``:qs``, any ``n``); among equals the shortest (the one the terms say
    most of, as BM25's length normalisation), then the newest. One column, ``id``; usable as a
    subquery (binds: :func:`best_binds`)."""
    table, fts = _TABLES[kind]
    if dialect == "sqlite":
        hits = " UNION ALL ".join(
            f"SELECT rowid AS id, :w{i} AS w FROM {fts} WHERE {fts} MATCH :q{i}" for i in range(n)
        )
        # The hits first, then each unit by its rowid (else SQLite loops the scope's units and
        # probes the index once per unit).
        return (
            f"WITH x AS MATERIALIZED ({hits}) "
            f"SELECT x.id AS id FROM x CROSS JOIN {table} m ON m.id = x.id WHERE {where} "
            f"GROUP BY x.id ORDER BY sum(x.w) DESC, {_SIZE[dialect]}, x.id DESC LIMIT :limit"
        )
    # Each term looked up on its own (a lateral index lookup per element of the :qs array):
    # with the scope token (in every unit of the scope) in the query, the planner prefers
    # scanning the whole table. The terms and weights are arrays, so the statement's text is
    # the same whatever their number: parsed and planned once per connection, not per turn.
    return (
        "SELECT x.id AS id FROM unnest(CAST(:qs AS TEXT[]), CAST(:ws AS DOUBLE PRECISION[])) "
        f"AS t(q, w) CROSS JOIN LATERAL (SELECT m.id, {_SIZE[dialect]} AS n FROM {table} m "
        f"WHERE m.terms_tsv @@ to_tsquery('simple', t.q) AND {where}) AS x GROUP BY x.id "
        "ORDER BY sum(t.w) DESC, max(x.n), x.id DESC LIMIT :limit"
    )


def shape(dialect: str, n: int) -> int:
    """The ``n`` of :func:`best_sql` for ``n`` chosen terms: SQLite's text depends on it,
    PostgreSQL's does not (0: one cached statement for all)."""
    return n if dialect == "sqlite" else 0


def best_binds(
    dialect: str,
    scope: str,
    chosen: Sequence[str],
    stats: CorpusStats,
    weights: Mapping[str, float],
    limit: int,
) -> dict[str, Any]:
    """The binds of :func:`best_sql` for these terms: each term's query and weight (idf × the
    query's weight), and the limit."""
    queries = [_term_query(dialect, scope, t) for t in chosen]
    # the engine weighs a concept as a word (it only finds candidates; the re-rank weighs more)
    ws = [stats.idf(t) * min(weights.get(t, 1.0), 1.0) for t in chosen]
    if dialect != "sqlite":  # arrays (:qs, :ws): one statement text for any number of terms
        return {"limit": limit, "qs": queries, "ws": ws}
    binds: dict[str, Any] = {"limit": limit}
    for i, (q, w) in enumerate(zip(queries, ws, strict=True)):
        binds[f"q{i}"], binds[f"w{i}"] = q, w
    return binds


@cache
def _best_statement(dialect: str, kind: str, n: int, where: str) -> FastStatement:
    """:func:`best_sql` as a statement of its own."""
    stmt = text(best_sql(dialect, kind, n, where))
    for name in ("now", "t0", "t1"):
        if f":{name}" in where:
            stmt = stmt.bindparams(bindparam(name, type_=UTCDateTime()))
    return FastStatement(stmt.columns(column("id", Integer)))


def best_ids(
    s: Session,
    kind: str,
    scope: str,
    chosen: Sequence[str],
    stats: CorpusStats,
    weights: Mapping[str, float],
    where: str,
    params: Mapping[str, Any],
    limit: int,
) -> list[int]:
    """The ``limit`` live units of ``kind`` (``memory`` or ``round``) holding the most
    (idf × query weight) of ``chosen``, newest first among equals; ``where`` filters the units
    (alias ``m``) with ``params``. One statement: the engine lists each term's units (an index
    lookup each), sums and sorts them; nothing is ranked per unit by the engine."""
    if not chosen or limit <= 0:
        return []
    dialect = dialect_name(s)
    stmt = _best_statement(dialect, kind, shape(dialect, len(chosen)), where)
    binds = dict(params) | best_binds(dialect, scope, chosen, stats, weights, limit)
    return [int(r[0]) for r in stmt.rows(s, binds)]


def id_list_sql(dialect: str, name: str) -> str:
    """SQL reading the id list bound as ``:name`` (see :func:`id_list`) as rows of ids."""
    if dialect == "sqlite":
        return f"SELECT value AS id FROM json_each(:{name})"
    return f"SELECT unnest(CAST(:{name} AS BIGINT[])) AS id"


def id_list(dialect: str, ids: Sequence[int]) -> Any:
    """``ids`` as the value of an :func:`id_list_sql` parameter."""
    return json.dumps(list(ids)) if dialect == "sqlite" else list(ids)
