"""World books for recall, reloaded only when a book changed (the store bumps ``revision``)."""

from __future__ import annotations

import threading

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


class BookCache:
    """Every world book of the database, cached per process and keyed on the books' revisions."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._key: tuple[tuple[str, str, str], ...] | None = None
        self._books: list[WorldBook] = []
        self._lock = threading.Lock()

    def _version(self, session: Session | None) -> tuple[tuple[str, str, str], ...]:
        if session is None:
            with read_session(self._engine) as s:
                return self._version(s)
        rows = _VERSIONS.rows(session, {})
        return tuple(sorted((r[0], r[1] or "", r[2] or "") for r in rows))

    def books(self, session: Session | None = None) -> list[WorldBook]:
        """The current books (one cheap query when nothing changed; in ``session``'s
        transaction when given)."""
        key = self._version(session)
        with self._lock:
            if key == self._key:
                return self._books
        books = WorldBookStore(self._engine).list_all()
        with self._lock:
            self._key, self._books = key, books
        return books
