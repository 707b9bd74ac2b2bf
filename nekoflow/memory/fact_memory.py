"""How a stated fact is written as a memory and shown: title, content, history and notes.

A fact memory's title is the slot in words (``用户的猫的名字``) and its content starts with
``<title>:<value>``, then the sentence it came from. When a newer value supersedes an older one,
the new memory carries the old value dated beside the current one — so an old value reaches the
prompt only with the current one, never alone (the superseded row itself is never retrieved).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from nekoflow.memory.fact_labels import slot_label, slot_of_label
from nekoflow.memory.facts import fact_key

__all__ = [
    "FACT_IMPORTANCE",
    "FactView",
    "fact_content",
    "fact_content_of",
    "fact_title",
    "read_fact",
    "summary_note",
    "update_line",
]

FACT_IMPORTANCE = 0.8
"""Importance of a stated fact (long-term, like an important memory)."""

_SOURCE = "\n原话:"
_HISTORY = "(此前:"
SENTENCE_CHARS = 200


@dataclass(frozen=True, slots=True)
class FactView:
    """A stored fact memory read back: its consolidation key (``user.name``, …) and value."""

    key: str
    value: str
    sentence: str
    slot: str = ""


def fact_title(slot: str) -> str:
    """The memory title of a fact in ``slot``: the slot in words."""
    return slot_label(slot)


def _day(at: datetime) -> str:
    return at.strftime("%Y-%m-%d")


def update_line(
    label: str, value: str, previous: Sequence[tuple[str, datetime]], since: datetime | None
) -> str:
    """The current value, with older values dated beside it: ``用户的猫的名字:团子(此前:年糕,
    2026-10-05记;2026-11-28起改)``. The one rule for showing a changed fact."""
    line = f"{label}:{value}"
    if previous:
        olds = ";".join(f"{v},{_day(at)}记" for v, at in previous)
        line += f"{_HISTORY}{olds}" + (f";{_day(since)}起改" if since else "") + ")"
    return line


def fact_content(
    slot: str,
    value: str,
    sentence: str,
    *,
    previous: Sequence[tuple[str, datetime]] = (),
    since: datetime | None = None,
) -> str:
    """A fact memory's content: the (dated) update line and the sentence it came from."""
    text = update_line(fact_title(slot), value, previous, since)
    said = " ".join(sentence.split())[:SENTENCE_CHARS]
    return text + (f"{_SOURCE}{said}" if said else "")


def read_fact(title: str, content: str) -> FactView | None:
    """A fact memory read back (None for any other memory): the slot from its title, the value
    from its first line, the sentence it came from."""
    if not title.startswith("用户") or not content.startswith(title + ":"):
        return None
    slot = slot_of_label(title)
    head, _, said = content.partition(_SOURCE)
    value = head[len(title) + 1 :].split(_HISTORY, 1)[0].strip()
    if slot is None or not value:
        return None
    return FactView(fact_key(slot, value), value, said, slot)


def fact_content_of(
    title: str, stated: FactView, previous: Sequence[tuple[str, datetime]], since: datetime
) -> str:
    """A stored fact's content again, now with the values it replaced dated beside it."""
    text = update_line(title, stated.value, previous, since)
    return text + (f"{_SOURCE}{stated.sentence}" if stated.sentence else "")


def summary_note(label: str, value: str, at: datetime) -> str:
    """The note a summary gains when a fact it states has changed since."""
    return f"(更新:{label}已改为{value},{_day(at)})"
