"""Consolidation of a new memory with what the scope already remembers (mem0's four operations).

* ADD — nothing like it exists: write it.
* UPDATE — it restates an existing memory (same slot and value, or nearly the same words):
  the existing one takes the new content, the higher importance, one more mention, last seen now.
* NOOP — word for word what an existing memory says: only its mention count and last seen move.
* DELETE — it contradicts an existing one (same slot, different value, e.g. ``我叫小明`` then
  ``我叫小红``): the old memory is superseded (kept as history, never retrieved) and the new one
  is added.

A *slot* is something a person has one of at a time: their name, age, home, birthday, a
favourite X, a pet's name. Slots are what :mod:`nekoflow.memory.facts` reads from what the user
said (for a rule review's ``用户:…`` / ``角色:…`` memory, the user's line only, so the character
introducing itself is not taken for the user; a question states nothing). A stated-fact memory
(:mod:`nekoflow.memory.fact_memory`) restated with the same value is a NOOP; a new value
supersedes it. Pure: no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from nekoflow.memory.fact_memory import read_fact
from nekoflow.memory.facts import extract_facts
from nekoflow.memory.lexical import terms

__all__ = ["Decision", "Existing", "Facts", "decide", "facts_of", "jaccard", "slot_of_key"]

RESTATE_SIMILARITY = 0.7
"""Term-set Jaccard similarity from which a memory counts as restating another."""

_SPLIT = re.compile(r"^(?:用户|user)\s*[::]\s*(.*)$", re.IGNORECASE | re.MULTILINE)
_LEGACY = {
    "user.name": "name",
    "user.nickname": "name",
    "user.age": "age",
    "user.home_city": "home",
    "user.birthday": "birthday",
}
"""Fact keys under the slot names consolidation used before the extractor (stored keys)."""


def slot_of_key(key: str) -> str:
    """The consolidation slot of a fact key (``user.name`` → ``name``, ``user.favourite.x`` →
    ``favourite:x``, any other key as it is)."""
    if key in _LEGACY:
        return _LEGACY[key]
    if key.startswith("user.favourite."):
        return "favourite:" + key.removeprefix("user.favourite.")
    return key


@dataclass(frozen=True, slots=True)
class Facts:
    """What consolidation reads from a memory: its slot (if any), its key and its terms."""

    slot: str | None
    value: str | None
    key: str
    words: frozenset[str]
    content: str
    #: A stated-fact memory (``用户的名字:小满``), not a turn's conversation memory.
    fact_row: bool = False


@dataclass(frozen=True, slots=True)
class Existing:
    """A live memory of the scope that a new one may restate or contradict."""

    id: int
    facts: Facts
    importance: float


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with a new memory: the operation and the memory it acts on."""

    op: Literal["ADD", "UPDATE", "DELETE", "NOOP"]
    target: int | None = None


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower().strip()


def _subject(title: str, content: str) -> str:
    """The text a memory is about: the user's lines of a ``用户:``/``角色:`` memory, else all."""
    user = _SPLIT.findall(content)
    return " ".join(user) if user else f"{title}\n{content}"


def _slot(text: str) -> tuple[str, str] | None:
    """The first fact the text states about the user (questions state nothing)."""
    for fact in extract_facts(text):
        return slot_of_key(fact.key), _value(fact.key, fact.slot, fact.value)
    return None


def _value(key: str, slot: str, value: str) -> str:
    """The value consolidation compares: for a liked/disliked thing, the polarity."""
    return slot if key != slot and slot in ("user.likes", "user.dislikes") else _norm(value)


@lru_cache(maxsize=8192)
def facts_of(title: str, content: str) -> Facts:
    """The consolidation view of a memory (title and content as stored); cached, as the same
    stored memories are read again by every write that may restate them."""
    stated = read_fact(title, content)
    if stated is not None:
        slot_name = slot_of_key(stated.key)
        return Facts(
            slot=slot_name,
            value=_value(stated.key, stated.slot, stated.value),
            key=f"slot:{slot_name}"[:200],
            words=frozenset(terms(_norm(f"{title} {content}"))),
            content=content,
            fact_row=True,
        )
    subject = _norm(_subject(title, content))
    slot = _slot(subject)
    key = f"slot:{slot[0]}" if slot else "t:" + re.sub(r"\W+", "", _norm(title))[:60]
    return Facts(
        slot=slot[0] if slot else None,
        value=slot[1] if slot else None,
        key=key[:200],
        words=frozenset(terms(subject)),
        content=content,
    )


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b| (0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def decide(new: Facts, existing: Sequence[Existing]) -> list[Decision]:
    """The operations for ``new`` given the scope's live memories (in id order)."""
    if new.slot is not None:
        same = [e for e in existing if e.facts.slot == new.slot]
        if same:
            latest = same[-1]
            if latest.facts.value != new.value:  # the newest statement wins
                return [Decision("DELETE", e.id) for e in same] + [Decision("ADD")]
            if new.fact_row:  # restating a stated fact changes nothing
                stated = [e for e in same if e.facts.fact_row]
                return [Decision("NOOP", stated[-1].id) if stated else Decision("ADD")]
            if not latest.facts.fact_row:
                op = "NOOP" if latest.facts.content == new.content else "UPDATE"
                return [Decision(op, latest.id)]
            # a turn's memory restating a stated fact: judged by its words, like any other
            existing = [e for e in existing if not e.facts.fact_row]
    best: Existing | None = None
    best_sim = 0.0
    for e in existing:
        if e.facts.slot is not None and new.slot is not None and e.facts.slot != new.slot:
            continue
        sim = jaccard(new.words, e.facts.words)
        if sim > best_sim or (sim == best_sim and best is not None and e.id > best.id):
            best, best_sim = e, sim
    if best is not None and best_sim >= RESTATE_SIMILARITY:
        return [Decision("NOOP" if best.facts.content == new.content else "UPDATE", best.id)]
    return [Decision("ADD")]


def model_decision(op: str | None, target: int | None, live: bool) -> list[Decision] | None:
    """The operations an LLM review decided for a new memory against a memory it was shown
    (``live``: that memory is a live fact of the same scope), or None — the rules decide — for
    ADD, no decision, or a target that is not live. ADD stays with the rules so a duplicate of a
    memory the model was not shown is still caught."""
    if target is None or not live:
        return None
    if op == "UPDATE":
        return [Decision("UPDATE", target)]
    if op == "NOOP":
        return [Decision("NOOP", target)]
    if op == "DELETE":
        return [Decision("DELETE", target), Decision("ADD")]
    return None
