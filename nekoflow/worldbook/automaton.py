"""Compiled keyword index of a world book (Aho-Corasick, ``pyahocorasick``), cached per version.

A :class:`CompiledBook` answers "which (entry, keyword) pairs occur in this text" in one pass over
the text, whatever the number of entries. It is exact with respect to the plain definition
``kw in text`` (case-sensitive entries) and ``kw.lower() in text.lower()`` (the others): the
case-insensitive automaton holds lower-cased keywords and runs over the lower-cased text, so even
characters whose ``lower()`` changes length (e.g. "İ") behave exactly like the substring test.

Cache key (see :func:`book_cache_key`):

* books of at most ``FINGERPRINT_MAX_ENTRIES`` entries are keyed by a fingerprint of what the
  index depends on (each entry's id, keywords, ``case_sensitive``, ``always_on``, whether it has
  ``state_triggers``, its secondary keys, regex / whole-word / scan-depth rules, and the book's
  whole-word and scan-depth rules) — always exact, cheap for small books;
* larger books are keyed by their version: ``(id, updated_at, entry count, store revision)``. The
  SQL store sets a new revision on every write. Code that edits a large book's entries in place
  must also change ``updated_at``, or it will be matched against the old index;
* larger books with neither ``updated_at`` nor a revision (built in code) are fingerprinted once
  and the fingerprint memoised on the book object, valid while its entries list, its length and
  :func:`~nekoflow.worldbook.rules.edit_generation` (bumped by every field assignment on any
  entry, book or rules) are unchanged. Assigning fields is seen; mutating a keyword list in place
  is not (assign a new list).

Every other entry field (enabled, priority, trigger_sources, content…) is read live at match time.

Speed: ``pyahocorasick`` finds a node's child by a linear scan, so a CJK book (thousands of
distinct first characters) makes every text character cost a scan of the root. Patterns and texts
are therefore matched in their UTF-16 (big-endian) form, one Latin-1 character per byte: node
fan-out drops to at most 256, and a CJK character costs two steps (UTF-8 took three: about a
third less time per character at realistic hit density). A match counts only when it starts on a
code-unit boundary (even byte offset), so a keyword's code units match exactly where the
keyword's characters do — except for keys holding surrogates or characters outside the BMP
(whose units a text's lone surrogates could imitate): those are confirmed by a substring test.

Pure module: no I/O.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

import ahocorasick

from nekoflow.worldbook.index import (
    CompiledBook,
    KeywordRef,
    PatternRefs,
    Side,
    Verifier,
    needs_substring_check,
    unit_view,
)
from nekoflow.worldbook.keys import (
    compile_regex_key,
    exact_literals,
    is_word_char,
    lower_safe,
    required_literals,
)
from nekoflow.worldbook.models import WorldBook, WorldBookEntry, edit_generation

FINGERPRINT_MAX_ENTRIES = 512
DEFAULT_CACHE_SIZE = 64


def _build_side(
    patterns: dict[str, list[KeywordRef]],
    verify: dict[KeywordRef, Verifier],
    primary_counts: list[int],
) -> Side:
    if not patterns:
        return Side(None, ())
    automaton = ahocorasick.Automaton()
    refs: list[tuple[KeywordRef, ...]] = []
    groups: list[PatternRefs] = []
    single: list[KeywordRef | None] = []
    for pid, (pattern, pattern_refs) in enumerate(patterns.items()):
        automaton.add_word(unit_view(pattern), pid)
        refs.append(tuple(pattern_refs))
        check = tuple(r for r in pattern_refs if r in verify)
        plain = [r for r in pattern_refs if r not in verify]
        group = (
            tuple(r for r in plain if r[1] < primary_counts[r[0]]),
            check,
            tuple(r for r in plain if r[1] >= primary_counts[r[0]]),
        )
        groups.append(group)
        single.append(group[0][0] if len(group[0]) == 1 and not check and not group[2] else None)
    automaton.make_automaton()
    return Side(automaton, tuple(refs), tuple(groups), tuple(single))


def _entry_depth(entry: WorldBookEntry, book_depth: int | None) -> int | None:
    depth = entry.rules.scan_depth
    return book_depth if depth is None else depth


def compile_book(book: WorldBook) -> CompiledBook:
    """Build the index of ``book`` (no caching; see :func:`compiled_book`)."""
    insensitive: dict[str, list[KeywordRef]] = {}
    sensitive: dict[str, list[KeywordRef]] = {}
    always_on: list[int] = []
    with_state: list[int] = []
    verify: dict[KeywordRef, Verifier] = {}
    unfiltered: list[tuple[KeywordRef, Any]] = []
    primary_counts: list[int] = []
    by_id: dict[str, int] = {}
    depths: dict[int | None, list[int]] = {}
    book_words = book.rules.match_whole_words
    book_depth = book.rules.scan_depth
    for entry_idx, entry in enumerate(book.entries):
        rules = entry.rules
        if entry.id and entry.id not in by_id:
            by_id[entry.id] = entry_idx
        primary_counts.append(len(entry.keywords))
        depth = _entry_depth(entry, book_depth)
        if depth != book_depth:
            depths.setdefault(depth, []).append(entry_idx)
        if entry.always_on:
            always_on.append(entry_idx)
        if entry.state_triggers:
            with_state.append(entry_idx)
        words = book_words if rules.match_whole_words is None else rules.match_whole_words
        table = sensitive if entry.case_sensitive else insensitive
        keys = entry.keywords
        if rules.secondary_keywords:
            keys = [*keys, *rules.secondary_keywords]
        for kw_idx, keyword in enumerate(keys):
            if not keyword:
                continue
            ref = (entry_idx, kw_idx)
            if rules.regex_keys:
                pattern = compile_regex_key(keyword)
                if pattern is not None:
                    exact = exact_literals(keyword)
                    if exact is not None and any(map(needs_substring_check, exact[0])):
                        exact = None  # confirmed by the regex itself (see the module docstring)
                    if exact is not None:  # the regex is a literal alternation: no regex run
                        lits, lowered = exact
                        for lit in lits:
                            side = insensitive if lowered or lower_safe(lit) else sensitive
                            side.setdefault(lit, []).append(ref)
                        continue
                    literals = required_literals(keyword)
                    if literals is None:
                        unfiltered.append((ref, pattern))
                        continue
                    lits, lowered = literals
                    for lit in lits:
                        side = insensitive if lowered or lower_safe(lit) else sensitive
                        side.setdefault(lit, []).append(ref)
                    verify[ref] = ("regex", pattern)
                    continue
            key = keyword if entry.case_sensitive else keyword.lower()
            (insensitive if lower_safe(key) else table).setdefault(key, []).append(ref)
            if words and (is_word_char(key[0]) or is_word_char(key[-1])):
                verify[ref] = ("word", key)
            elif needs_substring_check(key):
                verify[ref] = ("in", key)
    return CompiledBook(
        entry_count=len(book.entries),
        insensitive=_build_side(insensitive, verify, primary_counts),
        sensitive=_build_side(sensitive, verify, primary_counts),
        always_on=tuple(always_on),
        with_state_triggers=tuple(with_state),
        verify=verify,
        unfiltered=tuple(unfiltered),
        primary_counts=tuple(primary_counts),
        by_id=by_id,
        depth_groups={d: tuple(ix) for d, ix in depths.items()},
        default_depth=book_depth,
        newline_free=not any("\n" in p for p in (*insensitive, *sensitive)),
    )


def _entry_fingerprint(e: WorldBookEntry) -> tuple[Any, ...]:
    r = e.rules
    return (
        e.id,
        tuple(e.keywords),
        e.case_sensitive,
        e.always_on,
        bool(e.state_triggers),
        tuple(r.secondary_keywords),
        r.regex_keys,
        r.match_whole_words,
        r.scan_depth,
    )


def _fingerprint(book: WorldBook) -> Hashable:
    rules = book.rules
    return (
        "content",
        rules.match_whole_words,
        rules.scan_depth,
        tuple(_entry_fingerprint(e) for e in book.entries),
    )


def book_cache_key(book: WorldBook) -> Hashable:
    """The version key of ``book``'s index (see the module docstring for the rule)."""
    entries = book.entries
    if len(entries) <= FINGERPRINT_MAX_ENTRIES:
        return _fingerprint(book)
    # Private attributes read from pydantic's store of them: ``book._revision`` costs ~3 µs
    # (BaseModel.__getattr__), a dict lookup well under one.
    private = book.__pydantic_private__ or {}
    revision = private.get("_revision")
    if book.updated_at or revision:
        return (
            "version",
            book.id,
            book.updated_at,
            len(entries),
            revision,
            book.rules.match_whole_words,
            book.rules.scan_depth,
        )
    # A large book built in code: fingerprint it once per object and edit generation.
    memo = private.get("_fingerprint_memo")
    stamp = (id(entries), len(entries), edit_generation())
    if memo is not None and memo[0] == stamp:
        return memo[1]
    # A short digest, so the cache lookup does not hash the whole fingerprint on every call.
    digest = hashlib.blake2b(repr(_fingerprint(book)).encode(), digest_size=20).hexdigest()
    key = ("content-digest", len(entries), digest)
    book._fingerprint_memo = (stamp, key)
    return key


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
