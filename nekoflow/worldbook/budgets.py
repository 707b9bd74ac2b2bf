"""The lore budgets a turn uses, derived from the model's context window (pure)."""

from __future__ import annotations

from typing import Any, Literal

from nekoflow.worldbook.models import WorldBookRecallConfig

#: The seed's character budgets (``WorldBookRecallConfig()``), scaled together below.
_SEED = WorldBookRecallConfig()
#: A token is at most about this many characters (Latin text; CJK is ~1 char per token).
CHARS_PER_TOKEN = 4


def lore_recall_config(
    *,
    context_window: int = 8192,
    lore_share: float = 0.25,
    oversize: Literal["cut", "skip"] = "cut",
    recent_message_limit: int = 6,
    max_entries: int = _SEED.max_entries,
) -> WorldBookRecallConfig:
    """A turn's recall config: ``lore_share`` of the context window as the lore token budget.

    SillyTavern gives lore a share of the context (25% by default). The token budget binds; the
    character budgets keep the seed's proportions (total 3,000 : keyword 1,200 : always 800 :
    scene 1,000) scaled so the total is ``CHARS_PER_TOKEN`` × the token budget (never below the
    seed's), so they only stop what the token budget would let through for pathological text.
    ``max_entries`` caps the entries of the seed's own books only (imported SillyTavern books
    follow the budgets alone).
    """
    tokens = max(1, int(context_window * lore_share))
    scale = max(1.0, tokens * CHARS_PER_TOKEN / _SEED.max_total_chars)
    return WorldBookRecallConfig(
        recent_message_limit=recent_message_limit,
        max_total_chars=int(_SEED.max_total_chars * scale),
        max_keyword_chars=int(_SEED.max_keyword_chars * scale),
        max_always_chars=int(_SEED.max_always_chars * scale),
        max_scene_chars=int(_SEED.max_scene_chars * scale),
        max_total_tokens=tokens,
        max_entries=max_entries,
        oversize=oversize,
    )


def recall_config_of(settings: Any) -> WorldBookRecallConfig:
    """The recall config a turn uses under ``settings`` (a :class:`nekoflow.settings.Settings`):
    what turns, test-match and imports measure against."""
    return lore_recall_config(
        context_window=settings.llm_context_window,
        lore_share=settings.lore_budget_share,
        oversize=settings.lore_oversize,
        recent_message_limit=settings.recent_message_limit,
        max_entries=settings.lore_max_entries,
    )
