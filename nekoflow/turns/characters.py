"""Characters (``Role`` rows): resolving the dispatcher's character id, relationship defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlmodel import Session, col, select

from nekoflow.errors import InputError
from nekoflow.review.models import RELATIONSHIP_DIMENSIONS
from nekoflow.storage.dialogue import Role

DEFAULT_RELATIONSHIP: dict[str, int] = {
    "affection": 50,
    "trust": 50,
    "familiarity": 30,
    "dependency": 30,
    "security": 50,
    "jealousy": 0,
}
"""Where a new relationship starts when the character card says nothing."""

RELATIONSHIP_ALIASES: dict[str, str] = {
    "affection": "affection",
    "好感": "affection",
    "好感度": "affection",
    "喜爱": "affection",
    "trust": "trust",
    "信任": "trust",
    "信任度": "trust",
    "familiarity": "familiarity",
    "熟悉": "familiarity",
    "熟悉度": "familiarity",
    "dependency": "dependency",
    "依赖": "dependency",
    "依赖度": "dependency",
    "security": "security",
    "安全感": "security",
    "jealousy": "jealousy",
    "嫉妒": "jealousy",
    "嫉妒度": "jealousy",
}


def clamp_dimension(value: int) -> int:
    """Relationship values live in 0–100."""
    return max(0, min(100, int(value)))


def normalize_relationship(values: Mapping[str, Any] | None) -> dict[str, int]:
    """Six dimensions from a mapping that may use aliases (好感, 信任度, …), over the defaults.

    Unknown keys are ignored; a non-numeric value is an ``InputError`` naming the key.
    """
    out = dict(DEFAULT_RELATIONSHIP)
    for key, raw in (values or {}).items():
        dim = RELATIONSHIP_ALIASES.get(str(key).strip().lower()) or RELATIONSHIP_ALIASES.get(
            str(key).strip()
        )
        if dim is None:
            continue
        try:
            out[dim] = clamp_dimension(int(float(raw)))
        except (TypeError, ValueError):
            raise InputError(
                f"relationship value {key!r} must be a number, got {raw!r}", field=str(key)
            ) from None
    return out


def initial_relationship(role: Role) -> dict[str, int]:
    """The role's starting relationship: its stored values over the defaults, clamped."""
    stored = dict(role.initial_relationship or {})
    return {
        d: clamp_dimension(stored.get(d, DEFAULT_RELATIONSHIP[d])) for d in RELATIONSHIP_DIMENSIONS
    }


def resolve_role(session: Session, character_id: str | None) -> Role | None:
    """The Role for a dispatcher character id: a numeric id, else a name; None → the first role."""
    if character_id not in (None, ""):
        text = str(character_id).strip()
        if text.isdigit():
            role = session.get(Role, int(text))
            if role is not None:
                return role
        return session.exec(select(Role).where(Role.name == text).order_by(col(Role.id))).first()
    return session.exec(select(Role).order_by(col(Role.id))).first()
