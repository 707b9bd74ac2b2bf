"""SillyTavern-grade rules of an entry and of a book (activation, timing, placement, budgets).

Every default means "as the seed does", so a seed entry (no ``rules``) behaves exactly as before.
The SillyTavern meaning of each field (docs: World Info) is kept; where nekoflow differs it says so:

* ``secondary_keywords`` + ``selective_logic``: after a primary keyword fires, AND ANY needs one
  secondary keyword, AND ALL every one, NOT ANY none, NOT ALL not all of them — looked for in every
  text the entry scans (SillyTavern's scan buffer);
* ``regex_keys``: keywords written ``/pattern/flags`` are regular expressions (flags ``i m s x u``;
  ``g``/``y`` are ignored), matched with the ``regex`` package under a time limit;
* ``match_whole_words`` (None = the book's setting): a keyword must not be glued to letters or
  digits of an alphabetic script; CJK characters are never word characters, so a keyword side
  that is CJK matches as a plain substring (whole words have no meaning there);
* ``scan_depth`` (None = the book's; None there too = the engine's history window): how many of
  the newest chat messages the entry scans, the user's message counting as the first;
* ``probability`` (%), ``group``/``group_override``/``group_weight``/``group_scoring``: decided
  deterministically from the turn id, so a retried turn picks the same entries;
* ``exclude_recursion`` (not activated by other entries' content), ``prevent_recursion`` (its
  content activates nothing), ``delay_until_recursion`` (N > 0: only activated by recursion
  step N or later);
* ``sticky`` / ``delay`` (cooldown is the entry's ``cooldown_turns``): counted in the scope's
  committed turns, like nekoflow's cooldowns (SillyTavern counts chat messages);
* ``position`` / ``depth`` / ``role``: where the content goes (see ``placement.place_lore``);
* ``ignore_budget``: taken even when the budgets are spent (still counts toward them);
* ``source``: the SillyTavern fields nekoflow does not interpret, kept verbatim for export (and,
  under ``nekoflow_decorators``, the CCv3 decorator lines the import cut from the content).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SelectiveLogic = Literal["and_any", "not_all", "not_any", "and_all"]
#: SillyTavern's ``selectiveLogic`` numbers, in order.
SELECTIVE_LOGICS: tuple[SelectiveLogic, ...] = ("and_any", "not_all", "not_any", "and_all")
Position = Literal[
    "before_char", "after_char", "an_top", "an_bottom", "at_depth", "em_top", "em_bottom", "outlet"
]
#: SillyTavern's ``position`` numbers, in order.
POSITIONS: tuple[Position, ...] = (
    "before_char",
    "after_char",
    "an_top",
    "an_bottom",
    "at_depth",
    "em_top",
    "em_bottom",
    "outlet",
)
Role = Literal["system", "user", "assistant"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant")


_generation = [0]


def edit_generation() -> int:
    """A counter bumped by every field assignment on entries, books and their rules.

    The automaton cache uses it to trust a memoised fingerprint of a large book built in code
    (assignments are seen; in-place edits of lists are not).
    """
    return _generation[0]


class Tracked(BaseModel):
    """A model whose public field assignments bump :func:`edit_generation`."""

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if not name.startswith("_"):
            _generation[0] += 1


class _Rules(Tracked):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class EntryRules(_Rules):
    """An entry's SillyTavern-grade activation, timing and placement rules (defaults = seed)."""

    secondary_keywords: list[str] = Field(default_factory=list)
    selective_logic: SelectiveLogic = "and_any"
    regex_keys: bool = False
    match_whole_words: bool | None = None
    scan_depth: int | None = Field(default=None, ge=0)
    probability: int = Field(default=100, ge=0, le=100)
    group: str = ""
    group_override: bool = False
    group_weight: int = Field(default=100, ge=0)
    group_scoring: bool | None = None
    exclude_recursion: bool = False
    prevent_recursion: bool = False
    delay_until_recursion: int = Field(default=0, ge=0)
    sticky: int = Field(default=0, ge=0)
    delay: int = Field(default=0, ge=0)
    position: Position = "before_char"
    depth: int = Field(default=4, ge=0)
    role: Role = "system"
    ignore_budget: bool = False
    source: dict[str, Any] = Field(default_factory=dict)

    def groups(self) -> list[str]:
        """The inclusion groups the entry belongs to (``group`` is comma-separated)."""
        return [g.strip() for g in self.group.split(",") if g.strip()]


class BookRules(_Rules):
    """A book's scan settings and token budget (a World Info file's top-level settings)."""

    scan_depth: int | None = Field(default=None, ge=0)
    token_budget: int | None = Field(default=None, ge=0)
    recursive_scanning: bool = False
    match_whole_words: bool = False
    group_scoring: bool = False
    #: The import's format (``world_info`` or ``character_book``) and the file's top-level
    #: fields nekoflow does not interpret, kept verbatim for export.
    source_format: str = ""
    source: dict[str, Any] = Field(default_factory=dict)


def is_default(rules: BaseModel) -> bool:
    """True when ``rules`` holds only defaults (seed behaviour)."""
    return not rules.model_dump(exclude_defaults=True)
