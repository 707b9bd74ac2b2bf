"""SQL shell of knowledge updates for what a prompt shows besides fact memories: notes for the
facts a text (a past round, a summary) states whose slot now holds another value, so an old
value never reaches the prompt alone. Retrieval calls :func:`stale_notes` on a past round it
shows (and on a memory that is no fact of a slot: a line stored verbatim); the summary task on
the span it summarises."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import lru_cache

from sqlalchemy import func
from sqlmodel import Session, col, select

from nekoflow.memory.consolidate import facts_of, slot_of_key
from nekoflow.memory.fact_memory import read_fact, summary_note
from nekoflow.memory.facts import Fact, extract_facts, same_value
from nekoflow.memory.store import live_clause
from nekoflow.storage.turns import MemoryRecord

__all__ = ["notes_for_each", "notes_for_facts", "stale_notes", "stated_facts"]


def notes_for_facts(
    s: Session, role_id: int, scope_id: str, facts: Iterable[Fact], now: datetime
) -> str:
    """Dated notes of the current value for each of ``facts`` whose slot now holds another one
    (one query for all of them; '' when all are current or unknown)."""
    return notes_for_each(s, role_id, scope_id, [list(facts)], now)[0]


def notes_for_each(
    s: Session, role_id: int, scope_id: str, groups: Sequence[Sequence[Fact]], now: datetime
) -> list[str]:
    """:func:`notes_for_facts` of each group of facts (texts shown together), in one query."""
    wanted = {f"slot:{slot_of_key(f.key)}" for facts in groups for f in facts}
    if not wanted:
        return [""] * len(groups)
    # The newest statement of each key, by when it was said (ties: the highest id): one group
    # per key however many live memories hold it.
    latest = (
        select(col(MemoryRecord.fact_key), func.max(MemoryRecord.created_at).label("at"))
        .where(live_clause(role_id, scope_id, now), col(MemoryRecord.fact_key).in_(list(wanted)))
        .group_by(col(MemoryRecord.fact_key))
        .subquery()
    )
    rows = s.exec(
        select(MemoryRecord)
        .join(
            latest,
            (col(MemoryRecord.fact_key) == latest.c.fact_key)
            & (col(MemoryRecord.created_at) == latest.c.at),
        )
        .where(live_clause(role_id, scope_id, now))
        .order_by(col(MemoryRecord.id))
    ).all()
    current = {row.fact_key: row for row in rows}
    return [_notes(current, facts) for facts in groups]


def _notes(current: dict[str | None, MemoryRecord], facts: Iterable[Fact]) -> str:
    """The notes for ``facts`` against the current memory of each slot."""
    notes: list[str] = []
    for fact in facts:
        row = current.get(f"slot:{slot_of_key(fact.key)}")
        if row is None:
            continue
        stated = read_fact(row.title, row.content)
        if stated is not None:
            value = stated.value
            same = same_value(value, fact.value) and stated.slot == fact.slot
        else:
            value = facts_of(row.title, row.content).value or ""
            same = same_value(value, fact.value)
        if value and not same:
            notes.append(summary_note(row.title, value, row.created_at))
    return " ".join(dict.fromkeys(notes))


@lru_cache(maxsize=4096)
def stated_facts(text: str) -> tuple[Fact, ...]:
    """The facts a shown text states (cached: the same past rounds recur turn after turn)."""
    return tuple(extract_facts(text))


def stale_notes(s: Session, role_id: int, scope_id: str, user_text: str, now: datetime) -> str:
    """Notes for what ``user_text`` (the user's words of a past round) states that has changed
    since: show them beside the round."""
    return notes_for_facts(s, role_id, scope_id, stated_facts(user_text), now)
