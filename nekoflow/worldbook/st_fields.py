"""SillyTavern entry fields: where each lives (World Info name, card name, card extension name),
its default, and how it maps onto a nekoflow entry — shared by import and export.

A World Info entry names a field ``excludeRecursion``; a character-card entry (V2/V3
``character_book``) names it ``extensions.exclude_recursion``; files converted between the two
(chub.ai exports) carry both. :data:`FIELDS` lists every field SillyTavern's World Info editor
writes, so each one of an imported entry is mapped, kept for export, or reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The field is mapped onto the entry (``mapped``), kept only for export because it changes
#: nothing nekoflow does (``kept``), or kept and reported when set, because nekoflow cannot apply
#: it (``unsupported``).
Kind = str


@dataclass(frozen=True)
class StField:
    """One SillyTavern entry field and its names in the two styles."""

    name: str  # canonical: the World Info name
    card: str | None  # top-level name in a card's character_book entry
    ext: str | None  # name in a card entry's ``extensions``
    default: Any
    kind: Kind = "mapped"
    #: The default of a card entry when it differs (SillyTavern's ``convertCharacterBook``).
    card_default: Any = None


FIELDS: tuple[StField, ...] = (
    StField("key", "keys", None, []),
    StField("keysecondary", "secondary_keys", None, []),
    StField("comment", "comment", None, ""),
    StField("content", "content", None, ""),
    StField("constant", "constant", None, False),
    # A card entry: ``selective: entry.selective || false`` in SillyTavern's convertCharacterBook.
    StField("selective", "selective", None, True, card_default=False),
    StField("selectiveLogic", None, "selectiveLogic", 0),
    StField("order", "insertion_order", None, 100),
    # A card entry: ``extensions.position``, else after the character unless ``"before_char"``.
    StField("position", None, "position", 0, card_default=1),
    StField("disable", None, None, False),
    StField("excludeRecursion", None, "exclude_recursion", False),
    StField("preventRecursion", None, "prevent_recursion", False),
    StField("delayUntilRecursion", None, "delay_until_recursion", False),
    StField("probability", None, "probability", 100),
    StField("useProbability", None, "useProbability", True),
    StField("depth", None, "depth", 4),
    StField("role", None, "role", 0),
    StField("group", None, "group", ""),
    StField("groupOverride", None, "group_override", False),
    StField("groupWeight", None, "group_weight", 100),
    StField("useGroupScoring", None, "use_group_scoring", None),
    StField("scanDepth", None, "scan_depth", None),
    StField("caseSensitive", "case_sensitive", "case_sensitive", None),
    StField("matchWholeWords", None, "match_whole_words", None),
    StField("sticky", None, "sticky", None),
    StField("cooldown", None, "cooldown", None),
    StField("delay", None, "delay", None),
    StField("ignoreBudget", None, "ignore_budget", False),
    StField("uid", "id", None, None, "kept"),
    StField("displayIndex", None, "display_index", None, "kept"),
    StField("addMemo", None, None, False, "kept"),
    StField("automationId", None, "automation_id", "", "kept"),
    StField("outletName", None, "outlet_name", "", "kept"),
    StField("vectorized", None, "vectorized", False, "unsupported"),
    StField("matchPersonaDescription", None, "match_persona_description", False, "unsupported"),
    StField("matchCharacterDescription", None, "match_character_description", False, "unsupported"),
    StField("matchCharacterPersonality", None, "match_character_personality", False, "unsupported"),
    StField(
        "matchCharacterDepthPrompt", None, "match_character_depth_prompt", False, "unsupported"
    ),
    StField("matchScenario", None, "match_scenario", False, "unsupported"),
    StField("matchCreatorNotes", None, "match_creator_notes", False, "unsupported"),
    StField("triggers", None, "triggers", [], "unsupported"),
    StField("characterFilter", None, "character_filter", None, "unsupported"),
)
BY_NAME = {f.name: f for f in FIELDS}


def default_of(spec: StField, *, card_style: bool) -> Any:
    """The value SillyTavern gives the field when the entry does not carry it."""
    if card_style and spec.card_default is not None:
        return spec.card_default
    return spec.default


#: Card-entry top-level fields that are not in :data:`FIELDS` by another name.
CARD_ONLY = {"enabled", "name", "priority", "use_regex", "extensions", "position"}
#: Fields only KoboldAI-style World Info carries (SillyTavern keeps them, uses none).
KOBOLD_KEPT = {"title", "folder"}


_EMPTY = (None, False, "", [], {})


def is_unset(value: Any, default: Any) -> bool:
    """True when ``value`` says nothing beyond SillyTavern's default (None, empty or default)."""
    if value is None or value == default or value in _EMPTY:
        return True
    # e.g. characterFilter {"isExclude": false, "names": [], "tags": []}
    return isinstance(value, dict) and all(v in _EMPTY for v in value.values())
