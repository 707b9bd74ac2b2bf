"""A compiled book index and its scan: which keys of which entries occur in a text. Pure.

Built by :func:`nekoflow.worldbook.automaton.compile_book` (see there for how and why).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import ahocorasick

from nekoflow.worldbook.keys import whole_word_in

#: Recursion pieces whose pattern ids one compiled book remembers (then it starts over):
#: about 0.9 KB each at realistic density (measured), so at most ~1 MB per cached book.
PIECE_MEMO_SIZE = 1024

#: One keyword reference: (entry index in ``book.entries``, keyword index in ``entry.keywords``).
KeywordRef = tuple[int, int]


#: The refs of one pattern split for the scan: (primary keys, keys to confirm, secondary keys).
PatternRefs = tuple[tuple[KeywordRef, ...], tuple[KeywordRef, ...], tuple[KeywordRef, ...]]


@dataclass(frozen=True, slots=True)
class Side:
    """One automaton (case-insensitive or case-sensitive half) and its pattern → refs table."""

    automaton: ahocorasick.Automaton | None
    refs: tuple[tuple[KeywordRef, ...], ...]
    groups: tuple[PatternRefs, ...] = ()
    #: Per pattern: its one ref when that is all it stands for (a primary key needing no
    #: confirmation: the common case), else None (see ``groups``).
    single: tuple[KeywordRef | None, ...] = ()

    def pattern_ids(self, text: str) -> set[int]:
        """Ids of the distinct patterns that occur in ``text`` (at a code-unit boundary)."""
        if self.automaton is None or not text:
            return set()
        # A match ending on an odd byte starts on an even one: it is aligned to the text's
        # UTF-16 code units (patterns are whole code units, an even number of bytes).
        return {pid for end, pid in self.automaton.iter(unit_view(text)) if end & 1}

    def refs_in(self, text: str) -> list[tuple[KeywordRef, ...]]:
        """The refs of every distinct pattern that occurs in ``text``."""
        refs = self.refs
        return [refs[pid] for pid in self.pattern_ids(text)]


def _add(found: dict[int, set[int]], entry_idx: int, kw_idx: int) -> None:
    keys = found.get(entry_idx)
    if keys is None:
        found[entry_idx] = {kw_idx}
    else:
        keys.add(kw_idx)


#: How a candidate key is confirmed: ("regex", pattern), ("word", key as compared) or ("in", key
#: as compared: a plain substring test, for keys the code-unit form cannot decide alone).
Verifier = tuple[str, Any]


@dataclass(frozen=True, slots=True)
class CompiledBook:
    """The keyword index of one book version, plus its always-on and scene-trigger entry lists.

    Key indexes of an entry run over ``keywords`` then ``rules.secondary_keywords``.
    """

    entry_count: int
    insensitive: Side
    sensitive: Side
    always_on: tuple[int, ...]
    with_state_triggers: tuple[int, ...]
    #: Keys confirmed after the automaton found their literal (regex keys, whole-word keys).
    verify: dict[KeywordRef, Verifier] = field(default_factory=dict)
    #: Regex keys without a required literal: run on every scan.
    unfiltered: tuple[tuple[KeywordRef, Any], ...] = ()
    #: Entry index → number of primary keywords (the rest of its key indexes are secondary).
    primary_counts: tuple[int, ...] = ()
    #: Entry id → entry index (sticky entries are looked up by id).
    by_id: dict[str, int] = field(default_factory=dict)
    #: Effective scan depth (entry's, else the book's; None = the engine's windows) → entries,
    #: for the depths some entry uses; entries not listed use ``default_depth``.
    depth_groups: dict[int | None, tuple[int, ...]] = field(default_factory=dict)
    default_depth: int | None = None
    #: Regex keys that hit the time limit: treated as not matching until the book changes (a
    #: new version is a new index), so a hostile pattern costs one time-out per process.
    hostile: set[KeywordRef] = field(default_factory=set)
    #: No pattern holds a line break (so :meth:`scan_pieces` may scan piece by piece).
    newline_free: bool = True
    #: Recursion piece → its pattern ids (case-insensitive side, case-sensitive side).
    piece_ids: dict[str, tuple[set[int], set[int]]] = field(default_factory=dict)

    def keyword_hits(
        self,
        text: str,
        lowered: str,
        *,
        timeout: float = 0.05,
        timed_out: list[KeywordRef] | None = None,
    ) -> dict[int, set[int]]:
        """Entry index → indexes of its non-empty keys found in ``text``.

        ``lowered`` must be ``text.lower()`` (passed in so callers lower each text once).
        Regex keys run for ``timeout`` seconds at most; one that times out counts as not found
        and its ref is appended to ``timed_out``.
        """
        hits: dict[int, set[int]] = {}
        verify = self.verify
        for side, subject in ((self.insensitive, lowered), (self.sensitive, text)):
            for refs in side.refs_in(subject):
                for ref in refs:
                    if verify:
                        how = verify.get(ref)
                        if how is not None and not _confirm(
                            how, text, subject, timeout, ref, timed_out
                        ):
                            continue
                    entry_idx, kw_idx = ref
                    found = hits.get(entry_idx)
                    if found is None:
                        hits[entry_idx] = {kw_idx}
                    else:
                        found.add(kw_idx)
        for ref, pattern in self.unfiltered:
            if _confirm(("regex", pattern), text, text, timeout, ref, timed_out):
                hits.setdefault(ref[0], set()).add(ref[1])
        return hits

    def scan(
        self,
        text: str,
        lowered: str,
        *,
        timeout: float = 0.05,
        timed_out: list[KeywordRef] | None = None,
    ) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
        """Like :meth:`keyword_hits`, split: (entry → primary keys, entry → secondary keys).

        Only entries with a primary key found need looking at; secondary keys are looked up
        for those. Plain keys cost no confirmation step.
        """
        found = (self.insensitive.pattern_ids(lowered), self.sensitive.pattern_ids(text))
        return self._resolve(found, text, lowered, timeout, timed_out)

    def scan_pieces(
        self,
        pieces: Sequence[str],
        *,
        timeout: float = 0.05,
        timed_out: list[KeywordRef] | None = None,
    ) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
        """:meth:`scan` of ``"\\n".join(pieces)``, each piece's automaton pass kept for reuse.

        Recursion scans the content of the entries that reached the prompt, the same entries
        turn after turn: a pattern without a line break occurs in the joined text exactly when
        it occurs in one of the pieces (and lower-casing stops at a line break), so the pattern
        ids of each piece are remembered per book version. Confirmations (regex, whole words)
        run on the joined text as in :meth:`scan`.
        """
        text = "\n".join(pieces)
        lowered = text.lower()
        if not self.newline_free:
            return self.scan(text, lowered, timeout=timeout, timed_out=timed_out)
        memo = self.piece_ids
        low_ids: set[int] = set()
        case_ids: set[int] = set()
        for piece in pieces:
            ids = memo.get(piece)
            if ids is None:
                if len(memo) >= PIECE_MEMO_SIZE:
                    memo.clear()
                ids = (
                    self.insensitive.pattern_ids(piece.lower()),
                    self.sensitive.pattern_ids(piece),
                )
                memo[piece] = ids
            low_ids |= ids[0]
            case_ids |= ids[1]
        return self._resolve((low_ids, case_ids), text, lowered, timeout, timed_out)

    def _resolve(
        self,
        found: tuple[set[int], set[int]],
        text: str,
        lowered: str,
        timeout: float,
        timed_out: list[KeywordRef] | None,
    ) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
        """The keys behind the pattern ids ``found`` (case-insensitive side, case-sensitive
        side) in ``text``: plain ones as they are, the others once confirmed."""
        primary: dict[int, set[int]] = {}
        secondary: dict[int, set[int]] = {}
        verify = self.verify
        counts = self.primary_counts
        for side, subject, pids in (
            (self.insensitive, lowered, found[0]),
            (self.sensitive, text, found[1]),
        ):
            groups = side.groups
            single = side.single
            for pid in pids:
                ref = single[pid]
                if ref is not None:
                    keys = primary.get(ref[0])
                    if keys is None:
                        primary[ref[0]] = {ref[1]}
                    else:
                        keys.add(ref[1])
                    continue
                plain, check, second = groups[pid]
                for entry_idx, kw_idx in plain:
                    keys = primary.get(entry_idx)
                    if keys is None:
                        primary[entry_idx] = {kw_idx}
                    else:
                        keys.add(kw_idx)
                for entry_idx, kw_idx in second:
                    keys = secondary.get(entry_idx)
                    if keys is None:
                        secondary[entry_idx] = {kw_idx}
                    else:
                        keys.add(kw_idx)
                for ref in check:
                    if ref in self.hostile:
                        continue
                    if _confirm(verify[ref], text, subject, timeout, ref, timed_out, self.hostile):
                        entry_idx, kw_idx = ref
                        _add(primary if kw_idx < counts[entry_idx] else secondary, *ref)
        for ref, pattern in self.unfiltered:
            if ref in self.hostile:
                continue
            if _confirm(("regex", pattern), text, text, timeout, ref, timed_out, self.hostile):
                entry_idx, kw_idx = ref
                _add(primary if kw_idx < counts[entry_idx] else secondary, *ref)
        return primary, secondary


def _confirm(
    how: Verifier,
    text: str,
    subject: str,
    timeout: float,
    ref: KeywordRef,
    timed_out: list[KeywordRef] | None,
    hostile: set[KeywordRef] | None = None,
) -> bool:
    kind, value = how
    if kind == "word":
        return whole_word_in(value, subject)
    if kind == "in":
        return value in subject
    try:
        return value.search(text, timeout=timeout) is not None
    except TimeoutError:
        if timed_out is not None:
            timed_out.append(ref)
        if hostile is not None:
            hostile.add(ref)
        return False


def unit_view(text: str) -> str:
    """``text``'s UTF-16 (big-endian) bytes as a Latin-1 string (the form the automatons run
    on: two bytes per character of the Basic Multilingual Plane)."""
    return text.encode("utf-16-be", "surrogatepass").decode("latin-1")


def needs_substring_check(key: str) -> bool:
    """True when a match of ``key``'s code units may not be a match of its characters: a key
    holding a surrogate or a character outside the BMP (a surrogate pair), which the code units
    of a text's lone surrogates, or half of a pair, could imitate."""
    if max(key) < "\ud800":
        return False
    return any("\ud800" <= c <= "\udfff" or c > "\uffff" for c in key)
