"""World books: entry models, multi-source recall (``match_entries_v2``), injector, cooldowns.

Storage (``nekoflow.worldbook.store``), Redis cooldowns (``nekoflow.worldbook.redis_cooldowns``),
importers and the CLI live in their own modules and are not imported here, so the pure core stays
free of SQL and Redis. The names below are imported on first use (PEP 562), so a process that
only needs a submodule (``nekoflow worldbook --help``) does not pay for the matcher and models.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nekoflow.worldbook.cooldowns import Cooldowns, CooldownState, InMemoryCooldowns
    from nekoflow.worldbook.injector import (
        format_world_book,
        inject_world_book,
        injected_entries,
    )
    from nekoflow.worldbook.matcher import (
        RecallOutcome,
        describe_matches,
        match_entries,
        match_entries_v2,
        recall,
    )
    from nekoflow.worldbook.models import (
        ENTRY_TYPE_PRIORITY,
        SOURCE_SCORES,
        DroppedEntry,
        WorldBook,
        WorldBookEntry,
        WorldBookMatchResult,
        WorldBookRecallConfig,
        WorldBookRecallContext,
    )
    from nekoflow.worldbook.placement import DepthInsert, LorePlacement, place_lore

_HOMES = {
    "cooldowns": ("Cooldowns", "CooldownState", "InMemoryCooldowns"),
    "injector": ("format_world_book", "inject_world_book", "injected_entries"),
    "matcher": ("RecallOutcome", "describe_matches", "match_entries", "match_entries_v2", "recall"),
    "models": (
        "ENTRY_TYPE_PRIORITY",
        "SOURCE_SCORES",
        "DroppedEntry",
        "WorldBook",
        "WorldBookEntry",
        "WorldBookMatchResult",
        "WorldBookRecallConfig",
        "WorldBookRecallContext",
    ),
    "placement": ("DepthInsert", "LorePlacement", "place_lore"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "ENTRY_TYPE_PRIORITY",
    "SOURCE_SCORES",
    "CooldownState",
    "Cooldowns",
    "DepthInsert",
    "DroppedEntry",
    "InMemoryCooldowns",
    "LorePlacement",
    "RecallOutcome",
    "WorldBook",
    "WorldBookEntry",
    "WorldBookMatchResult",
    "WorldBookRecallConfig",
    "WorldBookRecallContext",
    "describe_matches",
    "format_world_book",
    "inject_world_book",
    "injected_entries",
    "match_entries",
    "match_entries_v2",
    "place_lore",
    "recall",
]
