"""The six stages of a turn as plain Python, keyed on turn_id and idempotent.

Each stage reads what it needs from the database, stores its result in ``turn_stage`` and
returns it; called again for the same turn (a redelivered or retried task) it returns the stored
result without redoing the work. ``memory_build`` and ``apply_deltas`` write their effects in the
same transaction as their stored result, and ``apply_deltas`` also inserts the turn's
``DeltaLedger`` row, so a turn's deltas are applied exactly once.

Celery lives in ``nekoflow.worker``: these functions take a :class:`TurnDeps` and a turn id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.lines import render, turn_user_text, user_text
from nekoflow.turns.stages.apply import apply_deltas
from nekoflow.turns.stages.common import display_text
from nekoflow.turns.stages.dispatch import dispatch
from nekoflow.turns.stages.finish import announce, fail_turn, handoff, skip_turn
from nekoflow.turns.stages.llm import llm_call
from nekoflow.turns.stages.memory import memory_build
from nekoflow.turns.stages.prompt import before_turn, books_for, llm_messages
from nekoflow.turns.stages.review import review, review_input

__all__ = [
    "STAGE_FUNCS",
    "StageFunc",
    "announce",
    "apply_deltas",
    "before_turn",
    "books_for",
    "dispatch",
    "display_text",
    "fail_turn",
    "handoff",
    "llm_call",
    "llm_messages",
    "memory_build",
    "render",
    "review",
    "review_input",
    "skip_turn",
    "turn_user_text",
    "user_text",
]

StageFunc = Callable[[TurnDeps, str], Any]

STAGE_FUNCS: dict[str, StageFunc] = {
    "dispatch": dispatch,
    "before_turn": before_turn,
    "llm_call": llm_call,
    "memory_build": memory_build,
    "review": review,
    "apply_deltas": apply_deltas,
}
"""Stage name → function, in chain order."""
