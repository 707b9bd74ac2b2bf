"""A relationship's six dimensions as cards and people write them: defaults, aliases (好感,
信任度, …) and normalizing a mapping (plain Python)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nekoflow.errors import InputError
from nekoflow.review.models import clamp_dimension

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


def normalize_relationship(
    values: Mapping[str, Any] | None, *, strict: bool = False
) -> dict[str, int]:
    """Six dimensions from a mapping that may use aliases (好感, 信任度, …), over the defaults.

    A non-numeric value is an ``InputError`` naming the key. Lenient (cards, which carry other
    keys too): unknown keys are ignored and values clamped to 0–100. ``strict`` (what a person
    typed): an unknown key or a value outside 0–100 is an ``InputError`` naming the key.
    """
    out = dict(DEFAULT_RELATIONSHIP)
    for key, raw in (values or {}).items():
        dim = RELATIONSHIP_ALIASES.get(str(key).strip().lower()) or RELATIONSHIP_ALIASES.get(
            str(key).strip()
        )
        if dim is None:
            if strict:
                known = ", ".join(sorted({*DEFAULT_RELATIONSHIP, "好感", "信任", "熟悉"}))
                raise InputError(
                    f"unknown relationship dimension {key!r} (one of {known}, or an alias)",
                    field=str(key),
                )
            continue
        try:
            value = int(float(raw))
        except (TypeError, ValueError):
            raise InputError(
                f"relationship value {key!r} must be a number, got {raw!r}", field=str(key)
            ) from None
        if strict and not 0 <= value <= 100:
            raise InputError(
                f"relationship value {key!r} must be within 0–100, got {value}", field=str(key)
            )
        out[dim] = clamp_dimension(value)
    return out
