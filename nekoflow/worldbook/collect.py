"""Which entries fire in one turn, before ranking and budgets: keys, scene, sticky, recursion.

Per book (see ``matcher`` for the SPEC rules kept from the seed):

* keyword sources scan the texts of the entry's scan depth (``texts.scan_texts``); a source fires
  when the entry's primary keywords match there (``any``/``all``); its secondary keys are then
  checked with its selective logic over every text it scans;
* cooldown, session cap and delay block an entry that fired (reported as dropped); an entry in
  its sticky window fires without keys (source ``"sticky"``) and ignores its cooldown;
* ``delay_until_recursion`` entries fire only by recursion;
* recursion (books with ``rules.recursive_scanning``), driven by ``matcher``: the content of the
  entries that newly reached the prompt (within budgets; minus ``prevent_recursion`` ones) is
  scanned for further entries (source ``"recursion"``; ``exclude_recursion`` entries are not
  activated this way), as SillyTavern adds only budgeted entries to its recursion buffer; it
  stops when no new entry reaches the prompt, or after ``config.max_recursion_steps`` steps.

Pure: no I/O.
"""

from __future__ import annotations

import logging
from operator import itemgetter

from nekoflow.worldbook.automaton import CompiledBook, CompiledBookCache, KeywordRef
from nekoflow.worldbook.cooldowns import CooldownState
from nekoflow.worldbook.hits import (  # noqa: F401  (Hit, Drop, dropped: re-exported)
    EXTRA_SCORES,
    KEYWORD_SOURCES,
    RECURSION_SOURCE,
    STICKY_SOURCE,
    Drop,
    Hit,
    dropped,
    rank_key,
    source_score,
)
from nekoflow.worldbook.keys import secondary_ok
from nekoflow.worldbook.models import (
    ALWAYS_SOURCE,
    WorldBook,
    WorldBookEntry,
    WorldBookRecallConfig,
    WorldBookRecallContext,
)
from nekoflow.worldbook.texts import Texts, scan_texts, scene_matches

log = logging.getLogger(__name__)

#: A hit's sort key (see ``Hit.rank``).
RankKey = tuple[int, int, int, int, int, int]
#: What makes a hit for an entry fired by the assistant text alone: book, book index, entry,
#: entry index, key count.
PendingHit = tuple[WorldBook, int, WorldBookEntry, int, int]
_first = itemgetter(0)


def _primary_ok(found: set[int], entry: WorldBookEntry) -> bool:
    if not found:
        return False
    if entry.match_mode == "all":
        return len(found) == sum(1 for k in entry.keywords if k)
    return True


def _secondary_total(entry: WorldBookEntry) -> int:
    return sum(1 for k in entry.rules.secondary_keywords if k)


class Collector:
    """Collects one turn's fired entries over all books (one instance per recall)."""

    def __init__(
        self,
        context: WorldBookRecallContext,
        config: WorldBookRecallConfig,
        state: CooldownState | None,
        cache: CompiledBookCache,
    ) -> None:
        self.context = context
        self.config = config
        self.state = state
        self.cache = cache
        self.hits: list[Hit] = []
        self.dropped: list[Drop] = []
        self.timed_out: list[str] = []
        self._texts: dict[int | None, Texts] = {}
        #: Candidates for the assistant source: (rank key, the hit — or, for an entry that
        #: fired by the assistant text alone, what makes it, built only if it wins a slot —,
        #: the keys found in that text).
        self._assistant_pending: list[tuple[RankKey, Hit | PendingHit, set[int]]] = []
        self._recursive: list[tuple[int, WorldBook, CompiledBook]] = []

    def texts(self, depth: int | None) -> Texts:
        """The scan texts at ``depth`` (memoised for the recall)."""
        found = self._texts.get(depth)
        if found is None:
            found = self._texts[depth] = scan_texts(self.context, self.config, depth)
        return found

    def _hits_in(
        self, compiled: CompiledBook, book: WorldBook, text: str, lowered: str
    ) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
        timed_out: list[KeywordRef] = []
        found = compiled.scan(text, lowered, timeout=self.config.regex_timeout, timed_out=timed_out)
        self._log_timeouts(book, timed_out)
        return found

    def _log_timeouts(self, book: WorldBook, timed_out: list[KeywordRef]) -> None:
        for entry_idx, _ in timed_out:
            entry_id = book.entries[entry_idx].id
            log.warning("world book %s entry %s: regex key timed out", book.id, entry_id)
            self.timed_out.append(entry_id)

    def _blocked(self, book: WorldBook, entry: WorldBookEntry, sticky: bool) -> bool:
        if self.state is None or sticky:
            return False
        reason = self.state.block_reason(entry)
        if reason is not None:
            self.dropped.append(dropped(book, entry, reason))
            return True
        return False

    def add_book(self, book_idx: int, book: WorldBook) -> None:
        """Collect the entries of one (applicable) book."""
        compiled = self.cache.get(book)
        entries = book.entries
        state = self.state
        sticky: set[int] = set()
        if state is not None and state.activated:
            for entry_id in state.activated:
                i = compiled.by_id.get(entry_id)
                if i is not None and entries[i].enabled and state.sticky(entries[i]):
                    sticky.add(i)
        for i in compiled.always_on:
            e = entries[i]
            if e.enabled and not self._blocked(book, e, i in sticky):
                self.hits.append(Hit(book, book_idx, e, i, [ALWAYS_SOURCE], {}, 0, i in sticky))
                sticky.discard(i)

        scene = self.context.scene if self.config.enable_scene_trigger else {}
        scene_fired: set[int] = set()
        if scene:
            for i in compiled.with_state_triggers:
                e = entries[i]
                if "scene_state" in e.trigger_sources and scene_matches(scene, e.state_triggers):
                    scene_fired.add(i)

        grouped: set[int] = set()
        for members in compiled.depth_groups.values():
            grouped.update(members)
        passes: list[tuple[int | None, tuple[int, ...] | None]] = [(compiled.default_depth, None)]
        passes.extend(compiled.depth_groups.items())
        for depth, members in passes:
            texts = self.texts(depth)
            by_source = {
                src: self._hits_in(compiled, book, text, low) for src, (text, low) in texts.items()
            }
            candidates: set[int] = set()
            for primary, _ in by_source.values():
                candidates.update(primary)
            if members is None:
                candidates |= scene_fired | sticky
                if grouped:
                    candidates -= grouped
            else:
                candidates = (candidates | scene_fired | sticky) & set(members)
            special = scene_fired or sticky
            pairs = [(src, primary) for src, (primary, _) in by_source.items()]
            hits = self.hits
            pending = self._assistant_pending
            min_asst = self.config.min_assistant_priority
            for i in sorted(candidates):
                e = entries[i]
                # Field values from the models' ``__dict__`` (see ``Hit``): this loop runs for
                # every entry a key of which occurs in the texts.
                fields = e.__dict__
                rules = fields["rules"].__dict__
                if (
                    special
                    or rules["secondary_keywords"]
                    or rules["delay_until_recursion"]
                    or fields["match_mode"] != "any"
                ):
                    self._consider(book, book_idx, e, i, compiled, by_source, scene_fired, sticky)
                    continue
                # The common case (keys only, "any"), kept short: same rules as _consider.
                if fields["always_on"] or not fields["enabled"]:
                    continue
                listens = fields["trigger_sources"]
                sources: list[str] = []
                keys: dict[str, set[int]] = {}
                count = 0
                asst: set[int] | None = None
                for src, primary in pairs:
                    prim = primary.get(i)
                    if prim is None or src not in listens:
                        continue
                    if len(prim) > count:
                        count = len(prim)
                    if src == "assistant_recent":
                        asst = prim
                    else:
                        sources.append(src)
                        keys[src] = prim
                if not sources and asst is None:
                    continue
                if (
                    state is not None
                    and (
                        rules["delay"]
                        or fields["cooldown_turns"]
                        or fields["max_injections_per_session"]
                    )
                    and self._blocked(book, e, False)
                ):
                    continue
                if (
                    asst is not None
                    and fields["priority"] >= min_asst
                    and fields["entry_type"] != "secret"
                ):
                    if sources:
                        hit = Hit(book, book_idx, e, i, sources, keys, count)
                        pending.append((hit.key, hit, asst))
                    else:  # most assistant candidates lose the cap: no hit made for them yet
                        score = fields["priority"] + fields["weight"]
                        key = rank_key(fields, score, book_idx, i)
                        pending.append((key, (book, book_idx, e, i, count), asst))
                elif sources:
                    hits.append(Hit(book, book_idx, e, i, sources, keys, count))
        if book.rules.recursive_scanning:
            self._recursive.append((book_idx, book, compiled))

    def _consider(
        self,
        book: WorldBook,
        book_idx: int,
        e: WorldBookEntry,
        i: int,
        compiled: CompiledBook,
        by_source: dict[str, tuple[dict[int, set[int]], dict[int, set[int]]]],
        scene_fired: set[int],
        sticky: set[int],
    ) -> None:
        if e.always_on or not e.enabled:
            return
        is_sticky = i in sticky
        rules = e.rules
        sources: list[str] = []
        keys: dict[str, set[int]] = {}
        secondary: set[int] = set()
        n_primary = 0
        if not rules.delay_until_recursion:
            listens = e.trigger_sources
            for src in KEYWORD_SOURCES:
                pair = by_source.get(src)
                if pair is None or src not in listens:
                    continue
                if rules.secondary_keywords:
                    found_secondary = pair[1].get(i)
                    if found_secondary:
                        secondary |= found_secondary
                prim = pair[0].get(i)
                if prim and (e.match_mode == "any" or _primary_ok(prim, e)):
                    sources.append(src)
                    keys[src] = prim
                    n_primary = max(n_primary, len(prim))
        if (
            sources
            and rules.secondary_keywords
            and not secondary_ok(rules.selective_logic, len(secondary), _secondary_total(e))
        ):
            sources, keys = [], {}
        if i in scene_fired:
            sources.append("scene_state")
        if not sources and not is_sticky:
            return
        if self.state is not None and self._blocked(book, e, is_sticky):
            return
        if is_sticky:
            sources.append(STICKY_SOURCE)
        asst_kw = keys.pop("assistant_recent", None)
        if asst_kw is not None:
            sources.remove("assistant_recent")
        hit = Hit(book, book_idx, e, i, sources, keys, n_primary + len(secondary))
        hit.sticky = is_sticky
        if (
            asst_kw is not None
            and e.priority >= self.config.min_assistant_priority
            and e.entry_type != "secret"
        ):
            self._assistant_pending.append((hit.key, hit, asst_kw))
        elif sources:
            self.hits.append(hit)

    def finish_keywords(self) -> None:
        """Apply the assistant cap: keep the candidates that rank highest with that source."""
        pending = self._assistant_pending
        # Ranked as with the assistant source added: the same score added to every candidate
        # keeps their order, so their own keys sort them.
        pending.sort(key=_first)
        cap = self.config.max_assistant_triggered_entries
        for n, (_, made, asst_kw) in enumerate(pending):
            if isinstance(made, Hit):
                hit = made
            elif n < cap:
                book, book_idx, e, i, count = made
                hit = Hit(book, book_idx, e, i, [], {}, count)
            else:
                continue  # fired by the assistant text alone, over the cap: not a hit
            if n < cap:
                hit.add_assistant(asst_kw)
            if hit.sources:
                self.hits.append(hit)
        self._assistant_pending = []

    @property
    def recursive(self) -> bool:
        """Whether any applicable book scans recursively (and steps are allowed)."""
        return bool(self._recursive) and self.config.max_recursion_steps > 0

    def recurse(self, texts: list[str], step: int) -> list[Hit]:
        """Recursion step ``step``: scan ``texts`` (the content of entries that reached the
        prompt) for entries not fired yet; returns (and records) the new hits."""
        pieces = [t for t in texts if t]
        if not pieces:
            return []
        taken = {(h.book_idx, h.entry_idx) for h in self.hits}
        new: list[Hit] = []
        timeout = self.config.regex_timeout
        for book_idx, book, compiled in self._recursive:
            timed_out: list[KeywordRef] = []
            found_primary, found_secondary = compiled.scan_pieces(
                pieces, timeout=timeout, timed_out=timed_out
            )
            self._log_timeouts(book, timed_out)
            entries = book.entries
            for i in sorted(found_primary):
                if (book_idx, i) in taken:
                    continue
                hit = self._recursion_hit(
                    book, entries, book_idx, i, found_primary[i], found_secondary.get(i), step
                )
                if hit is not None:
                    taken.add((book_idx, i))
                    new.append(hit)
        self.hits.extend(new)
        return new

    def _recursion_hit(
        self,
        book: WorldBook,
        entries: list[WorldBookEntry],
        book_idx: int,
        i: int,
        prim: set[int],
        secondary: set[int] | None,
        step: int,
    ) -> Hit | None:
        e = entries[i]
        fields = e.__dict__  # field values (see ``Hit``)
        rules = fields["rules"].__dict__
        if not fields["enabled"] or fields["always_on"] or rules["exclude_recursion"]:
            return None
        if rules["delay_until_recursion"] > step:
            return None
        n_secondary = len(secondary) if secondary else 0
        if fields["match_mode"] != "any" and not _primary_ok(prim, e):
            return None
        if rules["secondary_keywords"] and not secondary_ok(
            rules["selective_logic"], n_secondary, _secondary_total(e)
        ):
            return None
        if (
            self.state is not None
            and (rules["delay"] or fields["cooldown_turns"] or fields["max_injections_per_session"])
            and self._blocked(book, e, False)
        ):
            return None
        keys = {RECURSION_SOURCE: prim}
        return Hit(book, book_idx, e, i, [RECURSION_SOURCE], keys, len(prim) + n_secondary)
