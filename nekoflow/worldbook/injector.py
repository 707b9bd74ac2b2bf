"""Formats recalled entries into the ``world_book`` section of a :class:`PromptStack` (pure).

Each entry's content is stripped (blank ones skipped) and cut at 2000 characters + "..."; a
section is ``"【name】\\ncontent"`` (just the content when the entry has no name). Sections are
taken in the given order; one that would push the sections' total length past
``max_total_chars`` is skipped and the next one tried. The text is the header
``以下是在当前对话中触发的世界观设定:`` + blank line + sections joined by blank lines,
registered as key ``"world_book"``, priority 65, scope ``"turn"``.
Nothing is registered when no section fits.
"""

from __future__ import annotations

from collections.abc import Iterable

from nekoflow.errors import InputError
from nekoflow.prompt import PromptStack
from nekoflow.worldbook.models import WorldBookEntry, WorldBookMatchResult

MAX_ENTRY_CHARS = 2000
MAX_TOTAL_CHARS = 3000
HEADER = "以下是在当前对话中触发的世界观设定:"
PROMPT_KEY = "world_book"


def _entry(item: WorldBookEntry | WorldBookMatchResult, n: int) -> WorldBookEntry:
    if isinstance(item, WorldBookMatchResult):
        return item.entry
    if isinstance(item, WorldBookEntry):
        return item
    raise InputError(
        f"entries[{n}] must be a WorldBookEntry or WorldBookMatchResult, got {type(item).__name__}",
        field=f"entries[{n}]",
    )


def _sections(
    entries: Iterable[WorldBookEntry | WorldBookMatchResult], max_total_chars: int
) -> list[tuple[WorldBookEntry, str]]:
    picked: list[tuple[WorldBookEntry, str]] = []
    total = 0
    for n, item in enumerate(entries or []):
        entry = _entry(item, n)
        content = entry.content.strip()
        if not content:
            continue
        if len(content) > MAX_ENTRY_CHARS:
            content = content[:MAX_ENTRY_CHARS] + "..."
        section = f"【{entry.name}】\n{content}" if entry.name else content
        if total + len(section) > max_total_chars:
            continue
        picked.append((entry, section))
        total += len(section)
    return picked


def format_world_book(
    entries: Iterable[WorldBookEntry | WorldBookMatchResult],
    max_total_chars: int = MAX_TOTAL_CHARS,
) -> str:
    """The ``world_book`` section text for ``entries`` ("" when none fits)."""
    sections = [section for _, section in _sections(entries, max_total_chars)]
    if not sections:
        return ""
    return HEADER + "\n\n" + "\n\n".join(sections)


def injected_entries(
    entries: Iterable[WorldBookEntry | WorldBookMatchResult],
    max_total_chars: int = MAX_TOTAL_CHARS,
) -> list[WorldBookEntry]:
    """The entries whose sections :func:`inject_world_book` actually puts in the prompt.

    The matcher's budgets count raw content; the injector counts whole sections (name line
    included) and skips blank contents, so an entry the matcher returned can still be left out
    here. Record cooldowns for these entries, not for every match.
    """
    return [entry for entry, _ in _sections(entries, max_total_chars)]


def inject_world_book(
    stack: PromptStack,
    entries: Iterable[WorldBookEntry | WorldBookMatchResult],
    max_total_chars: int = MAX_TOTAL_CHARS,
) -> None:
    """Register the recalled ``entries`` in ``stack`` as the turn-scoped ``world_book`` section."""
    text = format_world_book(entries or [], max_total_chars)
    if text:
        stack.add(PROMPT_KEY, text, priority=PromptStack.PRIORITY_WORLD_BOOK, scope="turn")
