"""Characters (``Role`` rows): resolving the dispatcher's character id, relationship defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import bindparam
from sqlalchemy import select as sa_select
from sqlmodel import Session

from nekoflow.errors import InputError
from nekoflow.review.models import RELATIONSHIP_DIMENSIONS, clamp_dimension
from nekoflow.storage.dialogue import Role
from nekoflow.storage.fastsql import Bind, FastStatement

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


def initial_relationship(role: Role) -> dict[str, int]:
    """The role's starting relationship: its stored values over the defaults, clamped."""
    stored = dict(role.initial_relationship or {})
    return {
        d: clamp_dimension(stored.get(d, DEFAULT_RELATIONSHIP[d])) for d in RELATIONSHIP_DIMENSIONS
    }


def resolve_role(session: Session, character_id: str | None) -> Role | None:
    """The Role for a dispatcher character id: a numeric id, else a name; None → the first role."""
    found = role_id_and_name(session, character_id)
    return None if found is None else session.get(Role, found[0])


def role_id_and_name(session: Bind, character_id: str | None) -> tuple[int, str] | None:
    """:func:`resolve_role`'s id and name only (what dispatch needs: never the card)."""
    if character_id not in (None, ""):
        text = str(character_id).strip()
        row = _ROLE_BY_ID.first(session, {"p_id": int(text)}) if text.isdigit() else None
        if row is None:
            row = _ROLE_BY_NAME.first(session, {"p_name": text})
    else:
        row = _FIRST_ROLE.first(session, {})
    return None if row is None else (int(row[0]), str(row[1]))


_ROLE: Any = Role.__table__  # type: ignore[attr-defined]
_ROLE_BY_ID = FastStatement(
    sa_select(_ROLE.c.id, _ROLE.c.name).where(_ROLE.c.id == bindparam("p_id"))
)
_ROLE_BY_NAME = FastStatement(
    sa_select(_ROLE.c.id, _ROLE.c.name)
    .where(_ROLE.c.name == bindparam("p_name"))
    .order_by(_ROLE.c.id)
    .limit(1)
)
_FIRST_ROLE = FastStatement(sa_select(_ROLE.c.id, _ROLE.c.name).order_by(_ROLE.c.id).limit(1))
"""The default character (built once). LIMIT 1: without it every role would cross the wire
on every turn."""
