"""Characters (``Role`` rows): resolving the dispatcher's character id, a role's starting
relationship."""


from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam
from sqlalchemy import select as sa_select
from sqlmodel import Session

from nekoflow.characters.relationship import DEFAULT_RELATIONSHIP, normalize_relationship
from nekoflow.review.models import RELATIONSHIP_DIMENSIONS, clamp_dimension
from nekoflow.storage.dialogue import Line, Role, Save
from nekoflow.storage.fastsql import Bind, FastStatement

__all__ = [  # the relationship defaults live in nekoflow.characters.relationship
    "DEFAULT_RELATIONSHIP",
    "character_and_save",
    "initial_relationship",
    "normalize_relationship",
    "resolve_role",
    "role_id_and_name",
]

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
    """:func:`resolve_role`'s id and name only (never the card)."""
    found = character_and_save(session, character_id, None)
    return None if found is None else found[:2]


def character_and_save(
    session: Bind, character_id: str | None, scope_id: str | None
) -> tuple[int, str, int | None, datetime | None] | None:
    """What dispatch needs in one statement: :func:`resolve_role`'s id and name, and that
    character's save in ``scope_id`` — its id and its last line's time — when it has one
    (None, None otherwise)."""
    params: dict[str, Any] = {"p_scope": scope_id}
    if character_id not in (None, ""):
        text = str(character_id).strip()
        row = _BY_ID.first(session, params | {"p_id": int(text)}) if text.isdigit() else None
        if row is None:
            row = _BY_NAME.first(session, params | {"p_name": text})
    else:
        row = _FIRST.first(session, params)
    if row is None:
        return None
    return int(row[0]), str(row[1]), None if row[2] is None else int(row[2]), row[3]


def _with_save(*where: Any) -> FastStatement:
    """A character's id and name (the first by id matching ``where``) with its save in
    ``p_scope`` and that save's last line's time, LEFT JOINed (built once per shape)."""
    role, save, line = (t.__table__ for t in (Role, Save, Line))  # type: ignore[attr-defined]
    joined = role.outerjoin(
        save, and_(save.c.role_id == role.c.id, save.c.scope_id == bindparam("p_scope"))
    ).outerjoin(line, line.c.id == save.c.last_message_id)
    return FastStatement(
        sa_select(role.c.id, role.c.name, save.c.id, line.c.created_at)
        .select_from(joined)
        .where(*where)
        .order_by(role.c.id)
        .limit(1)  # the default character: without it every role would cross the wire
    )


_ROLE: Any = Role.__table__  # type: ignore[attr-defined]
_BY_ID = _with_save(_ROLE.c.id == bindparam("p_id"))
_BY_NAME = _with_save(_ROLE.c.name == bindparam("p_name"))
_FIRST = _with_save()
