"""SQL shell of knowledge updates for what a prompt shows besides fact memories: notes for the
facts a text (a past round, a summary) states whose slot now holds another value, so an old
value never reaches the prompt alone. Retrieval calls :func:`stale_notes` on a past round it
shows; the summary task on the span it summarises."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlmodel import Session, col, select

from nekoflow.memory.consolidate import facts_of, slot_of_key
from nekoflow.memory.fact_memory import read_fact, summary_note
from nekoflow.memory.facts import Fact, extract_facts, same_value
from nekoflow.memory.store import live_clause
from nekoflow.storage.turns import MemoryRecord

__all__ = ["notes_for_facts", "stale_notes"]


def notes_for_facts(
    s: Session, role_id: int, scope_id: str, facts: Iterable[Fact], now: datetime
) -> str:
    """Dated notes of the current value for each of ``facts`` whose slot now holds another one
    (one query for all of them; '' when all are current or unknown)."""
    wanted = {f"slot:{slot_of_key(f.key)}": f for f in facts}
    if not wanted:
        return ""
    rows = s.exec(
        select(MemoryRecord)
        .where(live_clause(role_id, scope_id, now), col(MemoryRecord.fact_key).in_(list(wanted)))
        .order_by(col(MemoryRecord.id))
    ).all()
    current = {row.fact_key: row for row in rows}  # the newest live memory of each key
    notes: list[str] = []
    for key, fact in wanted.items():
        row = current.get(key)
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


def stale_notes(s: Session, role_id: int, scope_id: str, user_text: str, now: datetime) -> str:
    """Notes for what ``user_text`` (the user's words of a past round) states that has changed
    since: show them beside the round."""
    return notes_for_facts(s, role_id, scope_id, extract_facts(user_text), now)
