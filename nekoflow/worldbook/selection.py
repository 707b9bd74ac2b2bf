"""From ranked hits to the entries a turn injects: inclusion groups, probability, budgets.

Deterministic: every draw is a hash of the turn id (``context.turn_id``) and what is drawn for, so
the same turn id picks the same entries (a retried turn renders the same prompt).

* Inclusion groups (SillyTavern): among the hits sharing a group, a sticky member wins; otherwise,
  with group scoring (the entry's ``group_scoring``, else its book's), only the members with the
  most matched keys stay; then a ``group_override`` member with the highest priority wins, or
  else one member is drawn with chances proportional to ``group_weight``. The others are dropped
  (``group_lost``).
* Probability: a hit with ``probability < 100`` (not sticky) stays when its draw in [0, 100) is
  below it (``probability``).
* Budgets (SPEC, walking the ranked hits): a hit is taken only if its content fits the remaining
  ``max_total_chars`` and its class budget (always / scene / keyword), and, when set, the
  remaining ``max_total_tokens`` and its book's ``token_budget``; else it is skipped
  (``over_budget``) and the next tried. The seed's ``max_entries`` caps the entries of the
  seed's own books (made in nekoflow): once that many are taken, the rest of those are dropped
  (``max_entries``). Imported SillyTavern books (``rules.source_format`` set) follow the budgets
  alone, as SillyTavern has no entry-count cap. ``ignore_budget`` entries are taken anyway (and
  counted). An entry longer
  than a whole budget it needs is, with ``config.oversize == "cut"``, cut to fit when it is first
  in line (nothing taken yet from its class or book budget); otherwise it is skipped with the
  budget it would need.

Pure: no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from nekoflow.tokens import estimate_tokens
from nekoflow.worldbook.collect import Drop, Hit, dropped
from nekoflow.worldbook.models import ALWAYS_SOURCE, WorldBookRecallConfig


def draw(turn_id: str, *parts: str) -> float:
    """A number in [0, 1) fixed by ``turn_id`` and ``parts``."""
    digest = hashlib.blake2b("\x1f".join((turn_id, *parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def apply_groups(hits: list[Hit], turn_id: str) -> tuple[list[Hit], list[Drop]]:
    """Keep one winner per inclusion group (ranked order kept)."""
    groups: dict[str, list[Hit]] = {}
    for hit in hits:
        if not hit.rules.group:
            continue
        for name in hit.rules.groups():
            groups.setdefault(name, []).append(hit)
    if not groups:
        return hits, []
    losers: set[int] = set()
    for name, members in groups.items():
        if len(members) < 2:
            continue
        winners = _group_winner(name, members, turn_id)
        losers.update(id(h) for h in members if h is not winners)
    kept = [h for h in hits if id(h) not in losers]
    lost = [dropped(h.book, h.entry, "group_lost") for h in hits if id(h) in losers]
    return kept, lost


def _group_winner(name: str, members: list[Hit], turn_id: str) -> Hit:
    stuck = [h for h in members if h.sticky]
    if stuck:
        return stuck[0]
    scoring = [
        h
        for h in members
        if (
            h.entry.rules.group_scoring
            if h.entry.rules.group_scoring is not None
            else h.book.rules.group_scoring
        )
    ]
    if scoring:
        best = max(h.key_count for h in members)
        members = [h for h in members if h.key_count == best]
    overrides = [h for h in members if h.entry.rules.group_override]
    if overrides:
        return max(overrides, key=lambda h: (h.entry.priority, -members.index(h)))
    total = sum(h.entry.rules.group_weight for h in members)
    if total <= 0:
        return members[0]
    roll = draw(turn_id, "group", name) * total
    for hit in members:
        roll -= hit.entry.rules.group_weight
        if roll < 0:
            return hit
    return members[-1]


def apply_probability(hits: list[Hit], turn_id: str) -> tuple[list[Hit], list[Drop]]:
    """Drop the hits whose deterministic probability draw fails."""
    kept: list[Hit] = []
    lost: list[Drop] = []
    for hit in hits:
        p = hit.rules.probability
        if (
            p < 100
            and not hit.sticky
            and draw(turn_id, "p", hit.book.id, hit.entry.id, str(hit.entry_idx)) * 100 >= p
        ):
            lost.append(dropped(hit.book, hit.entry, "probability"))
            continue
        kept.append(hit)
    return kept, lost


def class_of(hit: Hit) -> str:
    """Budget class: ``always`` (always_on), ``scene`` (scene_state alone) or ``keyword``."""
    if hit.sources == [ALWAYS_SOURCE]:
        return "always"
    if hit.sources == ["scene_state"]:
        return "scene"
    return "keyword"


def _cut_to_tokens(text: str, tokens: int) -> int:
    """The longest prefix length of ``text`` whose estimate is at most ``tokens``."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    return lo


class _Budgets:
    def __init__(self, config: WorldBookRecallConfig) -> None:
        self.config = config
        self.total = config.max_total_chars
        self.cls = {
            "always": config.max_always_chars,
            "scene": config.max_scene_chars,
            "keyword": config.max_keyword_chars,
        }
        self.tokens = config.max_total_tokens or None
        self.book_tokens: dict[str, int] = {}

    def book_left(self, hit: Hit) -> int | None:
        budget = hit.book.rules.token_budget
        if budget is None:
            return None
        return self.book_tokens.setdefault(hit.book.id, budget)


def counts_toward_max_entries(hit: Hit) -> bool:
    """Whether ``max_entries`` caps this hit: entries of the seed's own books (not imported)."""
    return not hit.book.rules.source_format


def apply_budgets(
    hits: Sequence[Hit], config: WorldBookRecallConfig, *, explain: bool = True
) -> tuple[list[tuple[Hit, int | None]], list[Drop]]:
    """Walk the ranked hits under the budgets; returns (hit, cut_to) taken and the dropped.

    With ``explain`` off the walk may stop early, once nothing left can be taken (the entry cap
    reached and only capped hits left), and the drops it returns are then incomplete.
    """
    b = _Budgets(config)
    taken: list[tuple[Hit, int | None]] = []
    lost: list[Drop] = []
    capped = 0  # entries taken from the seed's own books (max_entries counts only those)
    max_entries = config.max_entries
    # Hits of imported books still ahead (only they can be taken once the cap is reached).
    uncapped_left = 0
    if not explain:
        books = {id(h.book): h.book for h in hits}
        imported = {key for key, book in books.items() if book.rules.source_format}
        if imported:
            uncapped_left = sum(1 for h in hits if id(h.book) in imported)
    for hit in hits:
        book_rules = hit.book.rules
        is_capped = not book_rules.source_format
        if not is_capped:
            uncapped_left -= 1
        elif capped >= max_entries:
            if explain:
                lost.append(dropped(hit.book, hit.entry, "max_entries"))
            elif uncapped_left <= 0:
                break
            continue
        sources = hit.sources
        cls = (
            "always"
            if sources == [ALWAYS_SOURCE]
            else "scene"
            if sources == ["scene_state"]
            else "keyword"
        )
        content = hit.entry.content
        size = len(content)
        book_left = b.book_left(hit) if book_rules.token_budget is not None else None
        use_tokens = b.tokens is not None or book_left is not None
        if use_tokens:
            tokens = estimate_tokens(content)
            token_room = min(t for t in (b.tokens, book_left, 1 << 62) if t is not None)
        else:
            tokens, token_room = 0, 1 << 62
        cls_left = b.cls[cls]
        fits = size <= b.total and size <= cls_left and tokens <= token_room
        cut: int | None = None
        if not fits and not hit.entry.rules.ignore_budget:
            cut = _try_cut(hit, cls, size, tokens, token_room, b, config)
            if cut is None:
                lost.append(_over_budget(hit, cls, size, tokens, token_room, b, config))
                continue
            size = cut
            tokens = estimate_tokens(content[:cut]) if use_tokens else 0
        b.total = max(0, b.total - size)
        b.cls[cls] = max(0, cls_left - size)
        if b.tokens is not None:
            b.tokens = max(0, b.tokens - tokens)
        if book_left is not None:
            b.book_tokens[hit.book.id] = max(0, book_left - tokens)
        capped += is_capped
        taken.append((hit, cut))
    return taken, lost


def _class_max(cls: str, config: WorldBookRecallConfig) -> int:
    return {
        "always": config.max_always_chars,
        "scene": config.max_scene_chars,
        "keyword": config.max_keyword_chars,
    }[cls]


def _try_cut(
    hit: Hit,
    cls: str,
    size: int,
    tokens: int,
    token_room: int,
    b: _Budgets,
    config: WorldBookRecallConfig,
) -> int | None:
    if config.oversize != "cut":
        return None
    class_max = _class_max(cls, config)
    whole_chars = min(config.max_total_chars, class_max)
    book_budget = hit.book.rules.token_budget
    whole_tokens = min(t for t in (config.max_total_tokens or None, book_budget, 1 << 62) if t)
    oversize = size > whole_chars or tokens > whole_tokens
    first_in_line = b.cls[cls] == class_max  # nothing of its class taken yet
    if not (oversize and first_in_line):
        return None
    limit = min(size, b.total, b.cls[cls])
    if tokens > token_room:
        limit = min(limit, _cut_to_tokens(hit.entry.content[:limit], token_room))
    return limit if limit > 0 else None


def _over_budget(
    hit: Hit,
    cls: str,
    size: int,
    tokens: int,
    token_room: int,
    b: _Budgets,
    config: WorldBookRecallConfig,
) -> Drop:
    if size > b.total or size > b.cls[cls]:
        budget = "total" if b.total < b.cls[cls] else cls
        return dropped(
            hit.book,
            hit.entry,
            "over_budget",
            needed=size,
            available=min(b.total, b.cls[cls]),
            unit="chars",
            budget=budget,
        )
    return dropped(
        hit.book,
        hit.entry,
        "over_budget",
        needed=tokens,
        available=token_room,
        unit="tokens",
        budget="tokens",
    )
