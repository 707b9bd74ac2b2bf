"""World books for recall, reloaded only when a book changed (the store bumps ``revision``)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import JSON, func
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from nekoflow.storage import read_session
from nekoflow.storage.fastsql import FastStatement
from nekoflow.storage.worldbook import WorldBookRow
from nekoflow.worldbook import WorldBook
from nekoflow.worldbook.store import WorldBookStore

_VERSIONS = FastStatement(
    select(WorldBookRow.id, WorldBookRow.revision, WorldBookRow.updated_at)  # type: ignore[call-overload]
)
"""Every book's revision (built once: it runs before every turn's recall)."""

Versions = tuple[tuple[str, str, str], ...]
"""Every book's ``(id, revision, updated_at)``, sorted: the cache's key."""

_BOOK: Any = WorldBookRow.__table__  # type: ignore[attr-defined]


def versions_column(dialect: str) -> Any:
    """A scalar subquery of every book's ``[id, revision, updated_at]`` as one JSON array, for
    a stage's own read to carry (``json_agg`` / ``json_group_array``): the books' check then
    costs no statement of its own. Read its value with :func:`versions_key`."""
    cols = (_BOOK.c.id, _BOOK.c.revision, _BOOK.c.updated_at)
    if dialect == "postgresql":
        agg = func.json_agg(func.json_build_array(*cols), type_=JSON)
    else:
        agg = func.json_group_array(func.json_array(*cols), type_=JSON)
    return select(agg).scalar_subquery()  # type: ignore[call-overload]


def versions_key(rows: Iterable[Sequence[Any]] | None) -> Versions:
    """The cache key of the books' ``(id, revision, updated_at)`` rows (None: no books)."""
    return tuple(sorted((str(r[0]), str(r[1] or ""), str(r[2] or "")) for r in rows or ()))


class BookCache:
    """Every world book of the database, cached per process and keyed on the books' revisions."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._key: Versions | None = None
        self._books: list[WorldBook] = []
        self._lock = threading.Lock()

    def _version(self, session: Session | None) -> Versions:
        if session is None:
            with read_session(self._engine) as s:
                return self._version(s)
        return versions_key(_VERSIONS.rows(session, {}))

    def books(
        self, session: Session | None = None, *, versions: Versions | None = None
    ) -> list[WorldBook]:
        """The current books (one cheap query when nothing changed; in ``session``'s
        transaction when given). ``versions``: the books' revisions as the caller's own read
        returned them (:func:`versions_column`), saving that query."""
        key = versions if versions is not None else self._version(session)
        with self._lock:
            if key == self._key:
                return self._books
        books = WorldBookStore(self._engine).list_all()
        with self._lock:
            self._key, self._books = key, books
        return books
