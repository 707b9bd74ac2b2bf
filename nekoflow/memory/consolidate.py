"""Consolidation of a new memory with what the scope already remembers (mem0's four operations).

* ADD — nothing like it exists: write it.
* UPDATE — it restates an existing memory (same slot and value, or nearly the same words):
  the existing one takes the new content, the higher importance, one more mention, last seen now.
* NOOP — word for word what an existing memory says: only its mention count and last seen move.
* DELETE — it contradicts an existing one (same slot, different value, e.g. ``我叫小明`` then
  ``我叫小红``): the old memory is superseded (kept as history, never retrieved) and the new one
  is added.

A *slot* is something a person has one of at a time: their name, age, home, birthday, a
favourite X. Slots are detected by rules in Chinese and English on what the user said (for a
rule review's ``用户:…`` / ``角色:…`` memory, the user's line only, so the character introducing
itself is not taken for the user). Pure: no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from nekoflow.memory.lexical import terms

__all__ = ["Decision", "Existing", "Facts", "decide", "facts_of", "jaccard"]

RESTATE_SIMILARITY = 0.7
"""Term-set Jaccard similarity from which a memory counts as restating another."""

_VALUE = r"(?![他她你它])([^\s,,。.!!??;;、~]{1,16})"
_PARTICLES = "呀啊哦呢吧啦嘛哈哟噢喔"
_SLOTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("name", re.compile(r"我的名字(?:是|叫)" + _VALUE)),
    ("name", re.compile(r"(?:^|[^你他她它])我叫" + _VALUE)),
    ("name", re.compile(r"叫我" + _VALUE)),
    ("name", re.compile(r"\bmy name is ([a-z][\w'-]{0,30})")),
    ("name", re.compile(r"\bcall me ([a-z][\w'-]{0,30})")),
    ("age", re.compile(r"我(?:今年)?(\d{1,3})岁")),
    ("age", re.compile(r"\bi am (\d{1,3}) years? old")),
    ("age", re.compile(r"\bi'm (\d{1,3}) years? old")),
    ("home", re.compile(r"我(?:现在)?住在" + _VALUE)),
    ("home", re.compile(r"\bi live in ([a-z][\w' -]{0,30}?)(?:[,.!?]|$)")),
    ("birthday", re.compile(r"我的生日是" + _VALUE)),
    ("birthday", re.compile(r"\bmy birthday is ([\w ]{1,20}?)(?:[,.!?]|$)")),
)
_FAVOURITE = (
    re.compile(r"我最喜欢的([^\s,,。的]{1,6})是" + _VALUE),
    re.compile(r"\bmy fav(?:ou?rite) ([a-z]{2,20}) is ([a-z][\w' -]{0,30}?)(?:[,.!?]|$)"),
)
_SPLIT = re.compile(r"^(?:用户|user)\s*[::]\s*(.*)$", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Facts:
    """What consolidation reads from a memory: its slot (if any), its key and its terms."""

    slot: str | None
    value: str | None
    key: str
    words: frozenset[str]
    content: str


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
    for pattern in _FAVOURITE:
        m = pattern.search(text)
        if m:
            value = m.group(2).strip()
            return f"favourite:{m.group(1).strip()}", value.rstrip(_PARTICLES) or value
    for name, pattern in _SLOTS:
        m = pattern.search(text)
        if m:
            return name, m.group(1).strip().rstrip(_PARTICLES) or m.group(1).strip()
    return None


def facts_of(title: str, content: str) -> Facts:
    """The consolidation view of a memory (title and content as stored)."""
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
            if latest.facts.value == new.value:
                op = "NOOP" if latest.facts.content == new.content else "UPDATE"
                return [Decision(op, latest.id)]
            return [Decision("DELETE", e.id) for e in same] + [Decision("ADD")]
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
