"""Fixtures for the channel tests: real-looking platform events stored as JSON files."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

EVENTS = Path(__file__).parent / "events"


@pytest.fixture
def event() -> Callable[[str], dict[str, Any]]:
    """Load ``events/<name>.json`` as a fresh dict (tests may mutate it)."""

    def load(name: str) -> dict[str, Any]:
        return copy.deepcopy(json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8")))

    return load


def feishu_event(
    content: dict[str, Any], *, chat_type: str = "group", message_type: str = "text"
) -> dict[str, Any]:
    """A Feishu ``im.message.receive_v1`` event (schema 2.0) whose message mentions the bot
    ``ou_bot`` as ``@_user_1``; sender ``ou_84aa``, chat ``oc_5ce6d572455d361153b7xx51da133945``."""
    return {
        "schema": "2.0",
        "header": {
            "event_id": "5e3702a84e847582be8db7fb73283c02",
            "event_type": "im.message.receive_v1",
            "create_time": "1608725989000",
            "token": "rvaYgkND1GOiu5MM0E1rncYC6PLtF7JV",
            "app_id": "cli_9f5343c580712544",
            "tenant_key": "2ca1d211f64f6438",
        },
        "event": {
            "sender": {
                "sender_id": {"union_id": "on_8ed6", "user_id": "e33ggbyz", "open_id": "ou_84aa"},
                "sender_type": "user",
                "tenant_key": "736588c9260f175e",
            },
            "message": {
                "message_id": "om_5ce6d572455d361153b7cb51da133945",
                "create_time": "1609073151345",
                "chat_id": "oc_5ce6d572455d361153b7xx51da133945",
                "chat_type": chat_type,
                "message_type": message_type,
                "content": json.dumps(content, ensure_ascii=False),
                "mentions": [
                    {
                        "key": "@_user_1",
                        "id": {"union_id": "on_b", "user_id": "", "open_id": "ou_bot"},
                        "name": "猫猫",
                        "tenant_key": "736588c9260f175e",
                    }
                ],
            },
        },
    }
