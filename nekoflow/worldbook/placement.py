"""Where matched lore goes in the prompt: before/after the character definition or at a depth.

The shared contract between world-book recall (which decides each entry's position) and prompt
assembly (which places the text). Pure data, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from nekoflow.tokens import Tokenizer, estimate_tokens
from nekoflow.worldbook.models import DroppedEntry, WorldBookMatchResult

InsertRole = Literal["system", "user", "assistant"]
"""The chat role a depth insert is sent as."""


@dataclass(frozen=True)
class DepthInsert:
    """Text inserted into the chat history ``depth`` messages from its end (0 = after the last)."""

    depth: int
    role: InsertRole
    content: str
    order: int = 0


@dataclass
class LorePlacement:
    """Matched lore split by insertion position, each list already in prompt order."""

    before_char: list[str] = field(default_factory=list)
    after_char: list[str] = field(default_factory=list)
    at_depth: list[DepthInsert] = field(default_factory=list)

    def is_empty(self) -> bool:
        """True when no lore was placed anywhere."""
        return not (self.before_char or self.after_char or self.at_depth)


def _position_of(result: WorldBookMatchResult, author_note_depth: int) -> tuple[str, int, str]:
    """(list, depth, role) of one matched entry."""
    rules = result.entry.rules
    pos = rules.position
    if pos in ("before_char",):
        return "before_char", 0, "system"
    if pos in ("after_char", "em_top", "em_bottom", "outlet"):
        return "after_char", 0, "system"
    if pos in ("an_top", "an_bottom"):
        return "at_depth", author_note_depth, "system"
    return "at_depth", rules.depth, rules.role


def place_lore(
    results: Sequence[WorldBookMatchResult],
    *,
    max_tokens: int | None = None,
    author_note_depth: int = 4,
    tokenizer: Tokenizer | None = None,
) -> tuple[LorePlacement, list[DroppedEntry]]:
    """Split recalled entries by insertion position; returns the placement and what was left out.

    ``results`` come from :func:`~nekoflow.worldbook.matcher.match_entries_v2` (budgets already
    applied, entries cut to their budget carry ``cut_to``). Positions (``entry.rules.position``):
    ``before_char`` → ``before_char``; ``after_char`` and SillyTavern's example-message and outlet
    positions → ``after_char``; author's-note top/bottom → a system :class:`DepthInsert` at
    ``author_note_depth``; ``at_depth`` → a :class:`DepthInsert` at the entry's depth and role.
    Blank contents are dropped (``blank``); with ``max_tokens`` the entries are taken in recall
    order (highest ranked first) and one that would pass that many tokens in total is dropped
    (``over_budget``) and the next one tried. Each list is then in SillyTavern's prompt order:
    ascending insertion order (the entry's ``priority``, SillyTavern's ``order``), so the
    highest-order entry comes last, nearest the chat (SillyTavern walks entries by descending
    order and prepends each); equal orders keep the recall order. A depth insert's ``order``
    is the entry's priority. Pure.
    """
    placement = LorePlacement()
    dropped: list[DroppedEntry] = []
    kept = _within_budget(results, max_tokens, tokenizer, dropped)
    for result, content in sorted(kept, key=lambda k: k[0].entry.priority):  # stable
        entry = result.entry
        where, depth, role = _position_of(result, author_note_depth)
        if where == "before_char":
            placement.before_char.append(content)
        elif where == "after_char":
            placement.after_char.append(content)
        else:
            placement.at_depth.append(
                DepthInsert(depth=depth, role=role, content=content, order=entry.priority)  # type: ignore[arg-type]
            )
    return placement, dropped


def _within_budget(
    results: Sequence[WorldBookMatchResult],
    max_tokens: int | None,
    tokenizer: Tokenizer | None,
    dropped: list[DroppedEntry],
) -> list[tuple[WorldBookMatchResult, str]]:
    """The results to place with their stripped contents, in recall order; blank ones and
    those past ``max_tokens`` go to ``dropped``."""
    kept: list[tuple[WorldBookMatchResult, str]] = []
    used = 0
    for result in results:
        content = result.content.strip()
        if not content:
            dropped.append(_dropped(result, "blank"))
            continue
        if max_tokens is not None:
            size = estimate_tokens(content, tokenizer)
            if used + size > max_tokens:
                dropped.append(
                    _dropped(
                        result,
                        "over_budget",
                        needed=size,
                        available=max_tokens - used,
                        unit="tokens",
                        budget="placement",
                    )
                )
                continue
            used += size
        kept.append((result, content))
    return kept


def _dropped(result: WorldBookMatchResult, reason: str, **extra: object) -> DroppedEntry:
    return DroppedEntry(
        entry_id=result.entry.id,
        entry_name=result.entry.name,
        reason=reason,  # type: ignore[arg-type]
        **extra,  # type: ignore[arg-type]
    )
