"""A fired entry before ranking (:class:`Hit`) and a matched entry left out (:class:`Drop`).

Plain objects with slots: a recall makes hundreds of them, models only for what it returns. Pure.
"""

from __future__ import annotations

from typing import Any

from nekoflow.worldbook.models import (
    ENTRY_TYPE_PRIORITY,
    SOURCE_SCORES,
    DroppedEntry,
    WorldBook,
    WorldBookEntry,
)
from nekoflow.worldbook.rules import EntryRules

KEYWORD_SOURCES = ("user", "assistant_recent", "history")
STICKY_SOURCE = "sticky"
RECURSION_SOURCE = "recursion"
#: Scores of the sources SillyTavern's semantics add (the seed's are in ``SOURCE_SCORES``).
EXTRA_SCORES = {STICKY_SOURCE: 40, RECURSION_SOURCE: 10}
_SOURCE_ORDER = {
    s: n for n, s in enumerate(("user", "assistant_recent", "history", "scene_state", "sticky"))
}


_SCORES = {**EXTRA_SCORES, **SOURCE_SCORES}


def source_score(source: str) -> int:
    """The score one fired source adds."""
    return _SCORES.get(source, 0)


def rank_key(
    fields: dict, score: int, book_idx: int, entry_idx: int
) -> tuple[int, int, int, int, int, int]:
    """A hit's sort key from its entry's field values (``entry.__dict__``) and ``score``:
    highest score, then priority, then entry type, shortest content, then book and entry order."""
    return (
        -score,
        -fields["priority"],
        -ENTRY_TYPE_PRIORITY.get(fields["entry_type"], 0),
        len(fields["content"]),
        book_idx,
        entry_idx,
    )


class Hit:
    """A fired entry before ranking and budgets (cheap; models are built only for the winners)."""

    __slots__ = (
        "book",
        "book_idx",
        "entry",
        "entry_idx",
        "key",
        "key_count",
        "keys",
        "rules",
        "score",
        "sources",
        "sticky",
    )

    def __init__(
        self,
        book: WorldBook,
        book_idx: int,
        entry: WorldBookEntry,
        entry_idx: int,
        sources: list[str],
        keys: dict[str, set[int]],
        key_count: int = 0,
        sticky: bool = False,
    ) -> None:
        self.book = book
        self.book_idx = book_idx
        self.entry = entry
        self.entry_idx = entry_idx
        self.sources = sources
        #: Source → indexes (in ``entry.keywords``) of the primary keywords found there.
        self.keys = keys
        self.key_count = key_count
        self.sticky = sticky
        # The entry's field values, read from the model's ``__dict__`` (where pydantic keeps
        # them): a model's attribute lookup costs several dict lookups, and a recall makes
        # hundreds of hits.
        fields = entry.__dict__
        priority = fields["priority"]
        score = priority + fields["weight"]
        scores = _SCORES
        for s in sources:
            score += scores.get(s, 0)
        self.score = score
        #: The entry's rules (read once: selection looks at them for every hit).
        self.rules: EntryRules = fields["rules"]
        #: The sort key (see :meth:`rank`), made once: recall sorts the hits on every step.
        self.key: tuple[int, int, int, int, int, int] = rank_key(fields, score, book_idx, entry_idx)

    def matched_keywords(self) -> list[str]:
        """The primary keywords found, per fired source in order (each once)."""
        words = self.entry.keywords
        out: dict[str, None] = {}
        for s in self.sources:
            found = self.keys.get(s)
            if found:
                for k in sorted(found):
                    out[words[k]] = None
        return list(out)

    def rank(self, extra_score: int = 0) -> tuple[int, int, int, int, int, int]:
        """Sort key: score, priority, entry-type rank (desc), content length (asc), order."""
        if not extra_score:
            return self.key
        _, priority, type_rank, length, book_idx, entry_idx = self.key
        return (-(self.score + extra_score), priority, type_rank, length, book_idx, entry_idx)

    def add_assistant(self, asst_keys: set[int]) -> None:
        """Add the assistant_recent source (after the per-turn cap allowed it)."""
        self.sources = sorted([*self.sources, "assistant_recent"], key=_SOURCE_ORDER.__getitem__)
        self.keys["assistant_recent"] = asst_keys
        self.score += SOURCE_SCORES["assistant_recent"]
        _, priority, type_rank, length, book_idx, entry_idx = self.key
        self.key = (-self.score, priority, type_rank, length, book_idx, entry_idx)


class Drop:
    """A matched entry left out, and why (made into a :class:`DroppedEntry` only on request)."""

    __slots__ = ("book", "entry", "extra", "reason")

    def __init__(self, book: WorldBook, entry: WorldBookEntry, reason: str, extra: dict) -> None:
        self.book = book
        self.entry = entry
        self.reason = reason
        self.extra = extra

    def model(self) -> DroppedEntry:
        """The public :class:`DroppedEntry` (a turn explains up to hundreds of drops: the
        validating constructor, run by pydantic-core, is about 3x faster than
        ``model_construct``, which is plain Python)."""
        entry = self.entry.__dict__
        book = self.book.__dict__
        return DroppedEntry(
            entry_id=entry["id"],
            entry_name=entry["name"],
            book_id=book["id"],
            book_name=book["name"],
            reason=self.reason,  # type: ignore[arg-type]
            **self.extra,
        )


def dropped(book: WorldBook, entry: WorldBookEntry, reason: str, **extra: Any) -> Drop:
    """A :class:`Drop` of ``entry`` of ``book``."""
    return Drop(book, entry, reason, extra)
