"""What a turn in a scope would scan for world-book recall, for test-match (CLI and API).

before_turn scans the scope's dialogue as the memory builder renders it: the card's greeting
(written before the first turn's recall) and the newest ``history_limit`` lines of the active
path. :func:`scope_recent_messages` reads exactly that, without writing anything: a scope that
has not talked yet gets the greeting a first turn would write. The scope's timed effects
(cooldowns, sticky, delay) come from the same Redis store the turn reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from nekoflow.characters.card import CardData
from nekoflow.characters.greetings import greeting_text
from nekoflow.errors import InputError
from nekoflow.macros import MacroContext
from nekoflow.memory import build_memory
from nekoflow.memory.history import load_history_rows
from nekoflow.storage import read_session
from nekoflow.storage.dialogue import Role, Save
from nekoflow.storage.turns import TurnRun, TurnStage


@dataclass(frozen=True)
class ScopeView:
    """The character answering in a scope and the messages its next turn would scan."""

    #: None when the scope has no turns and no character was named: nothing to scan.
    role_id: int | None
    role_name: str
    messages: list[dict[str, str]]


def scope_view(
    engine: Engine, scope_id: str, *, role_id: int | None, history_limit: int
) -> ScopeView:
    """The scope's next-turn scan: ``role_id``'s history in ``scope_id`` (the scope's latest
    turn's character when None; an empty view when the scope has no turns either); InputError
    naming ``character`` for an unknown one."""
    with read_session(engine) as s:
        if role_id is None:
            role_id = s.exec(
                select(TurnRun.role_id)
                .where(TurnRun.scope_id == scope_id, col(TurnRun.role_id).is_not(None))
                .order_by(col(TurnRun.created_at).desc())
                .limit(1)
            ).first()
            if role_id is None:
                return ScopeView(role_id=None, role_name="", messages=[])
        role = s.get(Role, role_id)
        if role is None:
            raise InputError(f"no character {role_id!r}", field="character")
        save_id = s.exec(
            select(Save.id).where(Save.role_id == role_id, Save.scope_id == scope_id)
        ).first()
        rows = load_history_rows(s, save_id, limit=history_limit) if save_id is not None else []
        group = _in_group(s, scope_id)
    # as before_turn renders history (turns.stages.common.history_messages): one message per
    # user line, named in a group
    messages = build_memory(rows, role_id=role_id, user_separator="\n", name_users=group)
    card = CardData.model_validate(role.card) if role.card else None
    if not rows and card is not None and card.greetings():
        # a first turn writes the greeting before its recall
        text = greeting_text(card, 0, MacroContext(char=card.nickname.strip() or role.name))
        if text:
            messages = [{"role": "assistant", "content": text}]
    return ScopeView(role_id=int(role_id), role_name=role.name, messages=messages)


def _in_group(s: Any, scope_id: str) -> bool:
    """Whether the scope's latest claimed turn was in a group (its dispatch result says so)."""
    result = s.exec(
        select(TurnStage.result)
        .join(TurnRun, col(TurnRun.turn_id) == col(TurnStage.turn_id))
        .where(TurnRun.scope_id == scope_id, TurnStage.stage == "dispatch")
        .order_by(col(TurnRun.created_at).desc())
        .limit(1)
    ).first()
    return bool(isinstance(result, dict) and result.get("group_id"))
