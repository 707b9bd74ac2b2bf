"""Dialogue-tree writes: a turn's lines appended under a save's active leaf, idempotent per turn.

:func:`write_turn` locks the save, returns the turn's lines when they are already written, and
otherwise inserts them as a chain under the active leaf and moves the leaf to the last one — on
PostgreSQL in ONE statement whatever the number of lines (ids drawn from the line sequence
first, so each line's parent is known); on SQLite line by line. :func:`set_active_leaf` selects a
branch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from sqlalchemy import Integer, bindparam, insert, select, text, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.util import identity_key
from sqlmodel import Session, col

from nekoflow.errors import InputError
from nekoflow.memory.reply import ReplySegment
from nekoflow.memory.rounds import index_round
from nekoflow.storage.dialogue import Line, Save, utcnow
from nekoflow.storage.fastsql import Bind, FastStatement, Processor, detached, dialect_name

__all__ = ["UserLineIn", "set_active_leaf", "write_turn"]

_SAVE_TABLE: Any = Save.__table__  # type: ignore[attr-defined]


class UserLineIn(BaseModel):
    """One user line of a turn as the turn pipeline hands it to :func:`write_turn`."""

    model_config = ConfigDict(extra="forbid")

    content: str
    display_name: str | None = None
    role_id: int | None = None
    script_role_id: str | None = None
    original_emotion: str | None = None
    audio_file: str | None = None
    #: When the user sent it (merged messages keep their own times); None: the turn's time.
    sent_at: datetime | None = None


_USER_LINES = TypeAdapter(list[UserLineIn])
_SEGMENTS = TypeAdapter(list[ReplySegment])


class _TurnId(BaseModel):
    turn_id: str = Field(min_length=1, max_length=128)


_LOCK_SAVE = FastStatement(
    update(Save.__table__)  # type: ignore[attr-defined]
    .where(col(Save.id) == bindparam("p_save"))
    .values(updated_at=Save.updated_at)
    .returning(col(Save.last_message_id), col(Save.role_id), col(Save.scope_id))
)
"""The save's no-op UPDATE (built once)."""


def lock_save(session: Session, save_id: int) -> tuple[int | None, int, str]:
    """Take the save's write lock by a no-op UPDATE (PostgreSQL row lock, SQLite db lock);
    returns the save's active leaf as it is under the lock, its character and scope."""
    row = _LOCK_SAVE.first(session, {"p_save": save_id})
    if row is None:
        raise InputError(f"save {save_id!r} does not exist", field="save_id")
    return row[0], row[1], row[2]


_LINE_TABLE: Any = Line.__table__  # type: ignore[attr-defined]
_TURN_LINES = FastStatement(
    select(*_LINE_TABLE.c)
    .where(
        _LINE_TABLE.c.save_id == bindparam("p_save"), _LINE_TABLE.c.turn_id == bindparam("p_turn")
    )
    .order_by(_LINE_TABLE.c.id)
)


def saved_turn_lines(session: Session, save_id: int, turn_id: str) -> list[Line]:
    """The lines ``turn_id`` wrote in the save, oldest first (detached)."""
    rows = _TURN_LINES.rows(session, {"p_save": save_id, "p_turn": turn_id})
    return [detached(Line, row) for row in rows]


_SET_LEAF = FastStatement(
    update(_SAVE_TABLE)
    .where(_SAVE_TABLE.c.id == bindparam("p_save"))
    .values(last_message_id=bindparam("p_leaf"), updated_at=bindparam("p_at"))
)
"""The save's new active leaf after a turn's lines (Core, built once)."""
_LINE_COLUMNS = tuple(c.name for c in _LINE_TABLE.c)
_LINE_VALUES = tuple(c for c in _LINE_COLUMNS if c != "id")
_LINE_INSERT = FastStatement(
    insert(_LINE_TABLE)
    .values({name: bindparam(name, type_=_LINE_TABLE.c[name].type) for name in _LINE_VALUES})
    .returning(_LINE_TABLE.c.id)
)
"""One dialogue line, its id back (built once; bind parameters named as the columns)."""


_CHAIN_COLUMNS = tuple(n for n in _LINE_VALUES if n not in ("parent_line_id", "save_id", "turn_id"))
"""The columns a turn's lines differ in (one array parameter each in the chain insert)."""


@cache
def _chain_statement() -> FastStatement:
    """PostgreSQL: a turn's lines as a parent chain under ``p_leaf`` and the save's new leaf, in
    one statement returning the new ids in line order. The ids are drawn from the line sequence
    first (the CTE holding ``nextval`` is evaluated once) and given to the lines in ascending
    order, so each line's parent — the previous id, the first line's the old leaf — is known
    in the insert; the lines' values come as one array per column."""
    dialect = postgresql.dialect()
    arrays = ", ".join(
        f"CAST(:c_{n} AS {_LINE_TABLE.c[n].type.compile(dialect=dialect)}[])"
        for n in _CHAIN_COLUMNS
    )
    names = ", ".join(_CHAIN_COLUMNS)
    values = ", ".join(f"v.{n}" for n in _CHAIN_COLUMNS)
    sql = f"""
WITH ids AS MATERIALIZED (
    SELECT CAST(nextval(pg_get_serial_sequence('line', 'id')) AS INTEGER) AS id
    FROM generate_series(1, :p_count)
), chain AS (
    SELECT id, row_number() OVER (ORDER BY id) AS o,
        coalesce(lag(id) OVER (ORDER BY id), CAST(:p_leaf AS INTEGER)) AS parent
    FROM ids
), ins AS (
    INSERT INTO line (id, parent_line_id, save_id, turn_id, {names})
    SELECT chain.id, chain.parent, :p_save, :p_turn, {values}
    FROM chain JOIN unnest({arrays}) WITH ORDINALITY AS v({names}, o) ON v.o = chain.o
    RETURNING id
), leaf AS (
    UPDATE save SET last_message_id = (SELECT max(id) FROM ins), updated_at = :p_at
    WHERE id = :p_save
)
SELECT id FROM chain ORDER BY o"""
    return FastStatement(text(sql).columns(id=Integer))


@cache
def _chain_binds(dialect: Dialect) -> tuple[tuple[str, str, Processor | None], ...]:
    """Each chain column's name, array parameter and value processor (as SQLAlchemy's)."""
    return tuple(
        (n, f"c_{n}", _LINE_TABLE.c[n].type.dialect_impl(dialect).bind_processor(dialect))
        for n in _CHAIN_COLUMNS
    )


def _insert_chain_pg(
    session: Bind,
    lines: list[dict[str, Any]],
    leaf: int | None,
    save_id: int,
    turn_id: str,
    stamp: datetime,
) -> list[int]:
    """Insert ``lines`` (column values) as a chain under ``leaf`` and make the last one the
    save's leaf, in one statement (PostgreSQL); returns the lines' new ids, in line order."""
    dialect = session.get_bind().dialect if isinstance(session, Session) else session.dialect
    params: dict[str, Any] = {
        "p_count": len(lines),
        "p_leaf": leaf,
        "p_save": save_id,
        "p_turn": turn_id,
        "p_at": stamp,
    }
    for name, key, proc in _chain_binds(dialect):
        column = [line[name] for line in lines]
        params[key] = column if proc is None else [proc(v) for v in column]
    return [row[0] for row in _chain_statement().rows(session, params)]


def write_turn(
    session: Session,
    *,
    save_id: int,
    turn_id: str,
    user_lines: Sequence[UserLineIn | Mapping[str, Any]],
    reply_segments: Sequence[ReplySegment | Mapping[str, Any]],
    role_id: int | None,
    display_name: str | None,
    now: datetime | None = None,
) -> list[Line]:
    """Append one turn under the save's active leaf and make its last line the new leaf.

    Writes the user line(s), then one assistant line per reply segment (``role_id`` and
    ``display_name`` as given), all stamped ``turn_id`` and ``now``. Flushes, never commits: the
    caller's transaction makes the turn atomic. Idempotent per ``turn_id``: when the save already
    has lines of that turn they are returned unchanged and nothing is written. The save row is
    locked first, so concurrent writers of one save serialise. An empty ``user_lines`` with
    segments is a regenerated reply (a sibling, after :func:`set_active_leaf` on the user line).
    """
    turn_id = _TurnId(turn_id=turn_id).turn_id
    users = _USER_LINES.validate_python(list(user_lines))
    segments = _SEGMENTS.validate_python(list(reply_segments))
    if not users and not segments:
        raise InputError("a turn needs at least one user line or reply segment", field="user_lines")

    leaf, save_role, save_scope = lock_save(session, save_id)
    # Written before, by the lock's winner, or by a supersede
    # (``turns.flow_store.supersede_running`` keeps a superseded turn's user lines, outside any
    # stage result): never twice.
    existing = saved_turn_lines(session, save_id, turn_id)
    if existing:
        return existing
    stamp = now or utcnow()

    common = {"save_id": save_id, "turn_id": turn_id}
    values: list[dict[str, Any]] = [
        {
            **dict.fromkeys(_LINE_VALUES),
            **u.model_dump(exclude={"sent_at"}),
            **common,
            "attribute": "user",
            "created_at": u.sent_at or stamp,
        }
        for u in users
    ]
    values += [
        {
            **dict.fromkeys(_LINE_VALUES),
            **common,
            "attribute": "assistant",
            "original_emotion": s.emotion,
            "content": s.content,
            "tts_content": s.tts,
            "action_content": s.action,
            "role_id": role_id,
            "display_name": display_name,
            "created_at": stamp,
        }
        for s in segments
    ]
    parent = leaf
    if dialect_name(session) == "postgresql":
        ids = _insert_chain_pg(session, values, leaf, save_id, turn_id, stamp)
        for line, line_id in zip(values, ids, strict=True):
            line["id"], line["parent_line_id"], parent = line_id, parent, line_id
    else:
        for line in values:  # Core inserts (the ORM's unit of work per line costs more)
            line["parent_line_id"] = parent
            line["id"] = parent = _LINE_INSERT.scalar(session, line)  # the next line's parent
        _SET_LEAF.rows(session, {"p_save": save_id, "p_leaf": parent, "p_at": stamp})
    if users:  # a round: the retrieval unit of what was said (same transaction)
        index_round(
            session,
            role_id=save_role,
            scope_id=save_scope,
            save_id=save_id,
            turn_id=turn_id,
            line_id=values[0]["id"],
            at=values[0]["created_at"],
            user_text="\n".join(u.content for u in users),
            reply_text=" ".join(
                f"{s.content} {s.action}".strip() if s.action else s.content for s in segments
            ),
        )
    # Detached, as if loaded (a later add() does not insert them again); built from their
    # columns, which costs a fifth of the ORM's constructor.
    new_lines = [detached(Line, [line[c] for c in _LINE_COLUMNS]) for line in values]
    loaded = session.identity_map.get(identity_key(Save, save_id))
    if loaded is not None:  # a Save this session holds sees its new leaf, as the row does
        set_committed_value(loaded, "last_message_id", parent)
        set_committed_value(loaded, "updated_at", stamp)
    return new_lines


def set_active_leaf(session: Session, save_id: int, line_id: int) -> Save:
    """Select a branch: make ``line_id`` (a line of this save) the save's active leaf. Flushes."""
    line = session.get(Line, line_id)
    if line is None or line.save_id != save_id:
        raise InputError(f"line {line_id!r} is not a line of save {save_id!r}", field="line_id")
    save = session.get(Save, save_id)
    if save is None:  # pragma: no cover - the line's foreign key guarantees the save
        raise InputError(f"save {save_id!r} does not exist", field="save_id")
    save.last_message_id = line_id
    save.updated_at = utcnow()
    session.add(save)
    session.flush()
    return save
