"""Vector candidates over the whole scope: an exact scan bounded by a budget.

No ANN index is assumed (pgvector and sqlite-vec are optional extensions this project does not
require): the newest embedded live memories of the scope are read as (id, vector) only and
compared with the query's vector in Python, as many as :func:`scan_size` allows — a budget in
multiplications (``semantic_budget``: about 2,000 vectors of 256 dimensions, 330 of 1,536), so a
turn's cost stays bounded whatever the scope's size; up to that size the scan covers the whole
scope. The best ``limit`` become candidates beside the full-text ones.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from functools import cache
from typing import Any

from sqlalchemy import LargeBinary, bindparam, column, text
from sqlmodel import Session

from nekoflow.memory.embeddings import dot, unpack
from nekoflow.storage.dialogue import UTCDateTime
from nekoflow.storage.fastsql import FastStatement

__all__ = ["nearest_ids", "scan_size"]


def scan_size(dims: int, budget: int, cap: int) -> int:
    """How many vectors of ``dims`` dimensions one turn compares: ``budget`` multiplications,
    at most ``cap`` vectors."""
    return max(0, min(cap, budget // max(dims, 1)))


def best_by_vector(
    rows: Sequence[tuple[int, bytes | None]], query: Sequence[float], limit: int
) -> list[int]:
    """The ``limit`` ids whose vectors are most similar to ``query`` (unit vectors: the dot
    product), best first. Pure."""
    scored = []
    for uid, blob in rows:
        vector = unpack(blob)
        if vector is not None:
            scored.append((dot(query, vector), uid))
    return [uid for _, uid in heapq.nlargest(limit, scored)]


@cache
def _scan_sql(where: str) -> FastStatement:
    """The ``:v`` newest live memories with a vector from ``:em``: id and vector only."""
    stmt = text(
        f"SELECT m.id, m.embedding FROM memory_record m WHERE {where} "
        "AND m.embedding_model = :em ORDER BY m.id DESC LIMIT :v"
    ).bindparams(bindparam("now", type_=UTCDateTime()))
    return FastStatement(stmt.columns(column("id"), column("embedding", LargeBinary)))


def nearest_ids(
    s: Session,
    query: Sequence[float],
    model: str,
    where: str,
    params: dict[str, Any],
    *,
    limit: int,
    budget: int,
    cap: int,
) -> list[int]:
    """The ``limit`` live memories (``where``, alias ``m``, with ``params``) nearest to the
    query's vector among the scope's newest :func:`scan_size` embedded by ``model``."""
    n = scan_size(len(query), budget, cap)
    if n <= 0 or limit <= 0:
        return []
    rows = _scan_sql(where).rows(s, params | {"em": model, "v": n})
    return best_by_vector([(int(r[0]), r[1]) for r in rows], query, limit)
