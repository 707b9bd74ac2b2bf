"""Compiled keyword index of a world book (Aho-Corasick, ``pyahocorasick``), cached per version.

A :class:`CompiledBook` answers "which (entry, keyword) pairs occur in this text" in one pass over
the text, whatever the number of entries. It is exact with respect to the plain definition
``kw in text`` (case-sensitive entries) and ``kw.lower() in text.lower()`` (the others): the
case-insensitive automaton holds lower-cased keywords and runs over the lower-cased text, so even
characters whose ``lower()`` changes length (e.g. "İ") behave exactly like the substring test.

Cache key (see :func:`book_cache_key`):

* books of at most ``FINGERPRINT_MAX_ENTRIES`` entries, and books with neither ``updated_at`` nor a
  store revision, are keyed by a fingerprint of what the index depends on (each entry's keywords,
  ``case_sensitive``, ``always_on`` and whether it has ``state_triggers``) — always exact, cheap
  for small books;
* larger books are keyed by their version: ``(id, updated_at, entry count, store revision)``. The
  SQL store sets a new revision on every write. Code that edits a large book's entries in place
  must also change ``updated_at``, or it will be matched against the old index.

Every other entry field (enabled, priority, trigger_sources, content…) is read live at match time.

Speed: ``pyahocorasick`` finds a node's child by a linear scan, so a CJK book (thousands of
distinct first characters) makes every text character cost a scan of the root. Patterns and texts
are therefore matched in their UTF-8 form (one Latin-1 character per byte): node fan-out drops to
at most 256 (a handful at the root), 5–8× faster on CJK. UTF-8 is self-synchronising, so a
keyword's bytes occur in the text's bytes exactly when the keyword occurs in the text: results
are unchanged (lone surrogates are encoded with ``surrogatepass``, which keeps that property).

Pure module: no I/O.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

import ahocorasick

from nekoflow.worldbook.models import WorldBook

FINGERPRINT_MAX_ENTRIES = 512
DEFAULT_CACHE_SIZE = 64

#: One keyword reference: (entry index in ``book.entries``, keyword index in ``entry.keywords``).
KeywordRef = tuple[int, int]


@dataclass(frozen=True, slots=True)
class _Side:
    """One automaton (case-insensitive or case-sensitive half) and its pattern → refs table."""

    automaton: ahocorasick.Automaton | None
    refs: tuple[tuple[KeywordRef, ...], ...]

    def refs_in(self, text: str) -> list[tuple[KeywordRef, ...]]:
        """The refs of every distinct pattern that occurs in ``text``."""
        if self.automaton is None or not text:
            return []
        refs = self.refs
        return [refs[pid] for pid in {pid for _, pid in self.automaton.iter(utf8_view(text))}]


@dataclass(frozen=True, slots=True)
class CompiledBook:
    """The keyword index of one book version, plus its always-on and scene-trigger entry lists."""

    entry_count: int
    insensitive: _Side
    sensitive: _Side
    always_on: tuple[int, ...]
    with_state_triggers: tuple[int, ...]

    def keyword_hits(self, text: str, lowered: str) -> dict[int, set[int]]:
        """Entry index → indexes of its non-empty keywords found in ``text``.

        ``lowered`` must be ``text.lower()`` (passed in so callers lower each text once).
        """
        hits: dict[int, set[int]] = {}
        for side, subject in ((self.insensitive, lowered), (self.sensitive, text)):
            for refs in side.refs_in(subject):
                for entry_idx, kw_idx in refs:
                    found = hits.get(entry_idx)
                    if found is None:
                        hits[entry_idx] = {kw_idx}
                    else:
                        found.add(kw_idx)
        return hits


def utf8_view(text: str) -> str:
    """``text``'s UTF-8 bytes as a Latin-1 string (the form the automatons run on)."""
    return text.encode("utf-8", "surrogatepass").decode("latin-1")


def _build_side(patterns: dict[str, list[KeywordRef]]) -> _Side:
    if not patterns:
        return _Side(None, ())
    automaton = ahocorasick.Automaton()
    refs: list[tuple[KeywordRef, ...]] = []
    for pid, (pattern, pattern_refs) in enumerate(patterns.items()):
        automaton.add_word(utf8_view(pattern), pid)
        refs.append(tuple(pattern_refs))
    automaton.make_automaton()
    return _Side(automaton, tuple(refs))


def compile_book(book: WorldBook) -> CompiledBook:
    """Build the index of ``book`` (no caching; see :func:`compiled_book`)."""
    insensitive: dict[str, list[KeywordRef]] = {}
    sensitive: dict[str, list[KeywordRef]] = {}
    always_on: list[int] = []
    with_state: list[int] = []
    for entry_idx, entry in enumerate(book.entries):
        if entry.always_on:
            always_on.append(entry_idx)
        if entry.state_triggers:
            with_state.append(entry_idx)
        table = sensitive if entry.case_sensitive else insensitive
        for kw_idx, keyword in enumerate(entry.keywords):
            if not keyword:
                continue
            pattern = keyword if entry.case_sensitive else keyword.lower()
            table.setdefault(pattern, []).append((entry_idx, kw_idx))
    return CompiledBook(
        entry_count=len(book.entries),
        insensitive=_build_side(insensitive),
        sensitive=_build_side(sensitive),
        always_on=tuple(always_on),
        with_state_triggers=tuple(with_state),
    )


def book_cache_key(book: WorldBook) -> Hashable:
    """The version key of ``book``'s index (see the module docstring for the rule)."""
    entries = book.entries
    if len(entries) <= FINGERPRINT_MAX_ENTRIES or not (book.updated_at or book._revision):
        return (
            "content",
            tuple(
                (tuple(e.keywords), e.case_sensitive, e.always_on, bool(e.state_triggers))
                for e in entries
            ),
        )
    return ("version", book.id, book.updated_at, len(entries), book._revision)


class CompiledBookCache:
    """A bounded, thread-safe LRU of compiled books keyed by :func:`book_cache_key`."""

    def __init__(self, maxsize: int = DEFAULT_CACHE_SIZE) -> None:
        self._maxsize = maxsize
        self._items: OrderedDict[Hashable, CompiledBook] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, book: WorldBook) -> CompiledBook:
        """The compiled index of ``book``, built on first use of its version."""
        key = book_cache_key(book)
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return found
        compiled = compile_book(book)  # built outside the lock; a rare duplicate build is harmless
        with self._lock:
            self.misses += 1
            self._items[key] = compiled
            self._items.move_to_end(key)
            while len(self._items) > self._maxsize:
                self._items.popitem(last=False)
        return compiled

    def clear(self) -> None:
        """Drop every cached index."""
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


_default_cache = CompiledBookCache()


def compiled_book(book: WorldBook) -> CompiledBook:
    """The process-wide cached index of ``book``."""
    return _default_cache.get(book)


def default_cache() -> CompiledBookCache:
    """The process-wide cache (to inspect or clear it)."""
    return _default_cache
