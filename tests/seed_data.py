"""Data that the seeds themselves show, shared by the tests that check against them."""

from __future__ import annotations

import copy
from typing import Any

_WHITE_TOWER_OATH: dict[str, Any] = {
    "id": "white_tower_oath",
    "name": "白塔旧誓",
    "keywords": ["白塔", "旧日誓约"],
    "content": "白塔是上一轮命运循环中...",
    "enabled": True,
    "priority": 80,
    "case_sensitive": False,
    "match_mode": "any",
    "trigger_sources": ["user", "assistant_recent", "scene_state"],
    "always_on": False,
    "state_triggers": {"location": ["白塔", "观星塔"]},
    "cooldown_turns": 2,
    "entry_type": "event",
    "weight": 0,
    "tags": ["风堇", "翁法罗斯"],
}


def white_tower_oath(**overrides: Any) -> dict[str, Any]:
    """The 白塔旧誓 entry of seed world-book.md's world_books.json example (a fresh copy)."""
    return {**copy.deepcopy(_WHITE_TOWER_OATH), **overrides}


def seed_book(book_id: str = "omphalos", **overrides: Any) -> dict[str, Any]:
    """The seed's 翁法罗斯 book holding the 白塔旧誓 entry, as world_books.json stores it."""
    return {
        "id": book_id,
        "name": "翁法罗斯",
        "description": "崩坏:星穹铁道世界观设定",
        "character_ids": ["风堇"],
        "entries": {"white_tower_oath": white_tower_oath()},
        "enabled": True,
        **overrides,
    }
