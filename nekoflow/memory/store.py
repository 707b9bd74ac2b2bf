"""SQL shell of long-term memory writes: indexing, term statistics, consolidation, use, forget
(searching is :mod:`nekoflow.memory.search`).

Every function works in the caller's session and transaction (flushes, never commits), so the
live ``apply_deltas`` keeps its memory writes inside the transaction its ledger makes exactly
once, and the re-review's ``--apply`` inside its per-scope transaction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Integer, String, and_, bindparam, case, func, literal, or_, update
from sqlalchemy import select as sa_select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, col, select

from nekoflow.memory.consolidate import Existing, decide, facts_of, model_decision
from nekoflow.memory.fact_memory import fact_content_of, read_fact, summary_note
from nekoflow.memory.lexical import doc_terms, index_text, scope_token
from nekoflow.memory.scoring import Candidate, extended_expiry
from nekoflow.memory.search import corpus_stats, lexical_ids
from nekoflow.settings import Settings
from nekoflow.storage.dialogue import UTCDateTime
from nekoflow.storage.memory import DOCS, LENGTH, MemoryTermStat
from nekoflow.storage.turns import MemoryRecord

__all__ = [
    "RETRIEVED",
    "ConsolidationCounts",
    "add_indexed",
    "backfill",
    "forget",
    "index",
    "live_clause",
    "touch",
    "write_memories",
]


@dataclass(slots=True)
class ConsolidationCounts:
    """What :func:`write_memories` did with the new memories."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    superseded: int = 0


SUMMARY_NOTES = 50
"""At most this many summaries gain a note when a fact they state changes."""

RETRIEVED = ("fact", "summary")
"""The kinds of memory retrieval scores: facts and (older) summaries."""


def live_clause(
    role_id: int, scope_id: str, now: datetime, kinds: Sequence[str] = ("fact",)
) -> Any:
    """SQL condition: a scope's live memories of ``kinds`` (not superseded, not expired)."""
    return and_(
        col(MemoryRecord.role_id) == role_id,
        col(MemoryRecord.scope_id) == scope_id,
        col(MemoryRecord.kind).in_(list(kinds)),
        col(MemoryRecord.superseded_by).is_(None),
        or_(col(MemoryRecord.expires_at).is_(None), col(MemoryRecord.expires_at) > now),
    )


def index(rec: MemoryRecord) -> None:
    """Fill a memory's ``terms`` and ``fact_key`` from its title and content (a vector of an
    older content is dropped: the ``memory`` queue embeds the new one)."""
    rec.terms = index_text(rec.role_id, rec.scope_id, rec.title, rec.content)
    rec.fact_key = facts_of(rec.title, rec.content).key
    rec.embedding = rec.embedding_model = None


def stat_delta(rec: MemoryRecord, sign: int, into: Counter[tuple[str, str]]) -> None:
    key = scope_token(rec.role_id, rec.scope_id)
    words = doc_terms(rec.terms)
    into[(key, DOCS)] += sign
    into[(key, LENGTH)] += sign * len(words)
    for term in set(words):
        into[(key, term[:64])] += sign


def _stats_upsert_pg() -> Any:
    """PostgreSQL: add the rows of three arrays (``p_keys``, ``p_terms``, ``p_dfs``) to the term
    statistics in one statement of one shape, built once (a multi-row VALUES would be a new
    statement to compile for every row count)."""
    rows = (
        func.unnest(
            bindparam("p_keys", type_=ARRAY(String)),
            bindparam("p_terms", type_=ARRAY(String)),
            bindparam("p_dfs", type_=ARRAY(Integer)),
        )
        .table_valued("scope_key", "term", "df")
        .render_derived(with_types=False)
    )
    stmt = pg_insert(MemoryTermStat).from_select(
        ["scope_key", "term", "df"], sa_select(rows.c.scope_key, rows.c.term, rows.c.df)
    )
    return stmt.on_conflict_do_update(
        index_elements=["scope_key", "term"],
        set_={"df": MemoryTermStat.__table__.c.df + stmt.excluded.df},  # type: ignore[attr-defined]
    )


_STATS_UPSERT_PG = _stats_upsert_pg()


def apply_stats(s: Session, delta: Counter[tuple[str, str]]) -> None:
    """Add ``delta`` to the term statistics with one upsert (rows sorted: no deadlocks)."""
    rows = [(k, t, n) for (k, t), n in sorted(delta.items()) if n]
    if not rows:
        return
    if s.get_bind().dialect.name == "postgresql":
        keys, terms, dfs = (list(column) for column in zip(*rows, strict=True))
        s.connection().execute(_STATS_UPSERT_PG, {"p_keys": keys, "p_terms": terms, "p_dfs": dfs})
        return
    values = [{"scope_key": k, "term": t, "df": n} for k, t, n in rows]
    stmt: Any = sqlite_insert(MemoryTermStat).values(values)
    stmt = stmt.on_conflict_do_update(
        index_elements=["scope_key", "term"],
        set_={"df": MemoryTermStat.__table__.c.df + stmt.excluded.df},  # type: ignore[attr-defined]
    )
    s.execute(stmt)


def _existing(s: Session, rec: MemoryRecord, key: str, now: datetime) -> list[MemoryRecord]:
    """Live memories a new one may restate or contradict: same key, or lexically closest."""
    stats = corpus_stats(s, rec.role_id, rec.scope_id, doc_terms(rec.terms))
    near = lexical_ids(s, rec.role_id, rec.scope_id, doc_terms(rec.terms), stats, now, 20)
    cond = col(MemoryRecord.fact_key) == key
    if near:
        cond = or_(cond, col(MemoryRecord.id).in_(near))
    query = select(MemoryRecord).where(live_clause(rec.role_id, rec.scope_id, now), cond)
    return list(s.exec(query.order_by(col(MemoryRecord.id))).all())


def add_indexed(s: Session, rows: Sequence[MemoryRecord]) -> None:
    """Index stored rows written without consolidation (summaries) and count their terms."""
    delta: Counter[tuple[str, str]] = Counter()
    for rec in rows:
        index(rec)
        stat_delta(rec, +1, delta)
        s.add(rec)
    s.flush()
    apply_stats(s, delta)


def _shown(s: Session, rec: MemoryRecord, target: int | None, now: datetime) -> MemoryRecord | None:
    """The live fact of ``rec``'s scope with id ``target`` (what an LLM review decided about)."""
    if target is None:
        return None
    old = s.get(MemoryRecord, target)
    if old is None or (old.role_id, old.scope_id, old.kind) != (rec.role_id, rec.scope_id, "fact"):
        return None
    expires = old.expires_at
    if old.superseded_by is not None or (expires is not None and _aware(expires) <= now):
        return None
    return old


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def write_memories(
    s: Session,
    rows: Sequence[MemoryRecord],
    *,
    now: datetime,
    settings: Settings,
    decided: Sequence[tuple[str | None, int | None]] | None = None,
) -> ConsolidationCounts:
    """Consolidate new memories into their scope (ADD / UPDATE / DELETE / NOOP, in order).

    ``decided``: per row, an LLM review's ``(op, memory_id)``; an UPDATE, DELETE or NOOP of a
    live fact of the scope is carried out as decided, anything else is decided by the rules.
    """
    counts = ConsolidationCounts()
    delta: Counter[tuple[str, str]] = Counter()
    this_turn: dict[int | None, str | None] = {}  # the memories these rows added: their turn
    # Stated facts first: a turn's own memory that restates one is then judged beside it.
    order = sorted(
        range(len(rows)), key=lambda i: read_fact(rows[i].title, rows[i].content) is None
    )
    for i in order:
        rec = rows[i]
        index(rec)
        op, target = decided[i] if decided is not None and i < len(decided) else (None, None)
        shown = _shown(s, rec, target, now) if op in ("UPDATE", "DELETE", "NOOP") else None
        decisions = model_decision(op, target, shown is not None)
        if decisions is not None and shown is not None:
            existing = {shown.id: shown}
        else:
            facts = facts_of(rec.title, rec.content)
            existing = {m.id: m for m in _existing(s, rec, facts.key, now)}
            decisions = decide(
                facts,
                [
                    Existing(id=m.id, facts=facts_of(m.title, m.content), importance=m.importance)
                    for m in existing.values()
                    if m.id is not None
                ],
            )
        # one message's facts never replace each other ("我叫林小满,朋友都喊我小满": a name and
        # a nickname, both stand)
        decisions = [
            d
            for d in decisions
            if not (d.op == "DELETE" and rec.turn_id and this_turn.get(d.target) == rec.turn_id)
        ]
        adds = [d for d in decisions if d.op == "ADD"]
        gone = [existing[d.target] for d in decisions if d.op == "DELETE" and d.target in existing]
        stated = read_fact(rec.title, rec.content) if adds and gone else None
        if stated is not None:  # the old values stay visible only dated beside the new one
            olds = [(_old_value(old, rec.title), old.created_at) for old in gone]
            was = olds[-1][0][0]
            earlier = [(shown_as, at) for (_, shown_as), at in olds]
            rec.content = fact_content_of(rec.title, stated, earlier, now)
            index(rec)
            _note_summaries(s, rec, was, stated.value, now, delta)
        if adds:
            rec.updated_at = rec.updated_at or rec.created_at
            s.add(rec)
            s.flush()
            this_turn[rec.id] = rec.turn_id
            stat_delta(rec, +1, delta)
            counts.added += 1
        for d in decisions:
            old = existing.get(d.target) if d.target is not None else None
            if old is None:
                continue
            if d.op == "DELETE":
                old.superseded_by = rec.id
                old.superseded_at = now
                counts.superseded += 1
            else:
                _restate(old, rec, d.op == "UPDATE", now, settings, delta)
                counts.updated += d.op == "UPDATE"
                counts.unchanged += d.op == "NOOP"
            s.add(old)
        s.flush()
    apply_stats(s, delta)
    return counts


def _old_value(old: MemoryRecord, title: str) -> tuple[str, str]:
    """The value a superseded memory held, and how to show it beside the new one (with its own
    label when that differs: 用户喜欢:咖啡 beside 用户不喜欢:咖啡)."""
    stated = read_fact(old.title, old.content)
    if stated is not None:
        shown = stated.value if old.title == title else f"{old.title}:{stated.value}"
        return stated.value, shown
    value = facts_of(old.title, old.content).value or ""
    return value, value


def _note_summaries(
    s: Session,
    rec: MemoryRecord,
    old_value: str,
    new_value: str,
    now: datetime,
    delta: Counter[tuple[str, str]],
) -> None:
    """Live summaries of the scope that state ``old_value`` gain a dated note of the new value,
    so a summary never presents a superseded value as current."""
    if len(old_value) < 2 and not old_value.isdigit():
        return
    pattern = "%" + old_value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    note = summary_note(rec.title, new_value, now)
    rows = s.exec(
        select(MemoryRecord)
        .where(
            live_clause(rec.role_id, rec.scope_id, now, kinds=("summary",)),
            col(MemoryRecord.content).ilike(pattern, escape="\\"),
        )
        .limit(SUMMARY_NOTES)
    ).all()
    for summary in rows:
        if note in summary.content:
            continue
        stat_delta(summary, -1, delta)
        summary.content = f"{summary.content} {note}"
        summary.terms = index_text(
            summary.role_id, summary.scope_id, summary.title, summary.content
        )
        summary.embedding = summary.embedding_model = None
        stat_delta(summary, +1, delta)
        s.add(summary)


def _restate(
    old: MemoryRecord,
    new: MemoryRecord,
    update: bool,
    now: datetime,
    settings: Settings,
    delta: Counter[tuple[str, str]],
) -> None:
    """``old`` restated by ``new``: content (UPDATE), importance, mentions, last seen, expiry."""
    if update:
        stat_delta(old, -1, delta)
        old.title, old.content, old.mem_type, old.target = (
            new.title,
            new.content,
            new.mem_type,
            new.target,
        )
        index(old)
        stat_delta(old, +1, delta)
    old.importance = max(old.importance, new.importance)
    old.mentions = (old.mentions or 1) + 1
    old.updated_at = now
    if old.expires_at is None or new.expires_at is None:
        old.ttl, old.expires_at = "permanent", None
        return
    old.ttl = "long" if "long" in (old.ttl, new.ttl) else "short"
    old.expires_at = extended_expiry(
        old.ttl,
        old.importance,
        old.mentions + (old.access_count or 0),
        now,
        short_days=settings.memory_short_ttl_days,
        long_days=settings.memory_long_ttl_days,
        current=old.expires_at,
    )


def touch(s: Session, used: Sequence[Candidate], now: datetime, settings: Settings) -> int:
    """Mark the memories a turn's prompt used, in ONE UPDATE: last access now, one more use,
    expiry stretched by importance and use (never shortened)."""
    if not used:
        return 0
    expiry = {
        c.id: extended_expiry(
            c.ttl,
            c.importance,
            c.uses + 1,
            now,
            short_days=settings.memory_short_ttl_days,
            long_days=settings.memory_long_ttl_days,
            current=c.expires_at,
        )
        for c in used
    }
    stretched = {i: at for i, at in expiry.items() if at is not None}
    values: dict[str, Any] = {
        "last_accessed_at": now,
        "access_count": col(MemoryRecord.access_count) + 1,
    }
    if stretched:
        values["expires_at"] = case(
            *[
                (col(MemoryRecord.id) == i, literal(at, UTCDateTime()))
                for i, at in stretched.items()
            ],
            else_=col(MemoryRecord.expires_at),
        )
    stmt = (
        update(MemoryRecord)
        .where(col(MemoryRecord.id).in_(sorted(expiry)))
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    result: Any = s.execute(stmt)
    return int(result.rowcount or 0)


def forget(s: Session, rows: Sequence[MemoryRecord]) -> int:
    """Delete memories for good (and their history rows), keeping the statistics right."""
    delta: Counter[tuple[str, str]] = Counter()
    ids = [m.id for m in rows if m.id is not None]
    history = (
        list(s.exec(select(MemoryRecord).where(col(MemoryRecord.superseded_by).in_(ids))).all())
        if ids
        else []
    )
    gone = {m.id: m for m in [*rows, *history]}
    for m in gone.values():
        if m.terms:
            stat_delta(m, -1, delta)
        s.delete(m)
    s.flush()
    apply_stats(s, delta)
    return len(gone)


def remove_rows(s: Session, rows: Iterable[MemoryRecord]) -> None:
    """Delete rows (no history follow-up) keeping the statistics right; for rebuilds."""
    delta: Counter[tuple[str, str]] = Counter()
    for m in rows:
        if m.terms:
            stat_delta(m, -1, delta)
        s.delete(m)
    s.flush()
    apply_stats(s, delta)


def backfill(s: Session, batch: int = 500) -> int:
    """Index the memories written before long-term memory existed (no ``terms`` yet)."""
    done = 0
    while True:
        rows = s.exec(
            select(MemoryRecord)
            .where(col(MemoryRecord.terms).is_(None), col(MemoryRecord.kind) == "fact")
            .limit(batch)
        )
        todo = list(rows.all())
        if not todo:
            return done
        delta: Counter[tuple[str, str]] = Counter()
        for rec in todo:
            index(rec)
            rec.updated_at = rec.updated_at or rec.created_at
            stat_delta(rec, +1, delta)
            s.add(rec)
        s.flush()
        apply_stats(s, delta)
        done += len(todo)
