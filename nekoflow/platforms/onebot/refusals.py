"""The newest refused NapCat handshake, kept in Redis for ``nekoflow doctor``: why a bot that
is not connected was turned away (wrong token, wrong path, another QQ number)."""

from __future__ import annotations

import json
import time
from typing import Any

__all__ = ["RECORD_SECONDS", "last_refusal", "refusal_key", "refusal_record"]

RECORD_SECONDS = 3600
"""How long a refusal is remembered."""


def refusal_key(prefix: str) -> str:
    """The Redis key holding the gateway's newest refused handshake."""
    return f"{prefix}:onebot:refused"


def refusal_record(why: str, peer: str) -> str:
    """What is stored for one refusal now: its reason (never a token) and the peer's address."""
    return json.dumps({"at": int(time.time()), "why": why, "peer": peer})


def last_refusal(client: Any, prefix: str) -> str | None:
    """The newest refusal as one phrase ("12 s ago from 10.0.0.5: …"), or None."""
    raw = client.get(refusal_key(prefix))
    if raw is None:
        return None
    try:
        record = json.loads(raw)
        ago = max(int(time.time() - int(record["at"])), 0)
        return f"{ago} s ago from {record['peer']}: {record['why']}"
    except (ValueError, KeyError, TypeError):
        return None
