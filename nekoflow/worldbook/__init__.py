"""World books: entry models, multi-source recall (``match_entries_v2``), injector, cooldowns.

Storage (``nekoflow.worldbook.store``), Redis cooldowns (``nekoflow.worldbook.redis_cooldowns``),
importers and the CLI live in their own modules and are not imported here, so the pure core stays
free of SQL and Redis.
"""

from nekoflow.worldbook.cooldowns import Cooldowns, CooldownState, InMemoryCooldowns
from nekoflow.worldbook.injector import format_world_book, inject_world_book, injected_entries
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
