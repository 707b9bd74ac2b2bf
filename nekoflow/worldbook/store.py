"""World books in SQL: the seed's ``WorldBookStore`` CRUD and batch operations, plus atomic imports.

Every write validates through the pydantic models first (a bad field is a ``ValidationError`` or a
:class:`WorldBookDataError` naming each bad entry) and runs in one transaction, so nothing is
half-written. Every write to a book or its entries bumps the book's ``updated_at`` and its
revision, which versions the matcher's automaton cache. Conventions: lookups of a missing book or
entry return ``None`` (``delete*`` return ``False``); adding entries to a missing book raises
:class:`WorldBookNotFoundError`. Imports keep the given timestamps (lossless round trips).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import delete, func
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, select

from nekoflow.errors import InputError
from nekoflow.storage import create_all, get_engine, make_engine, session_scope
from nekoflow.storage.worldbook import WorldBookEntryRow, WorldBookRow
from nekoflow.worldbook.errors import WorldBookDataError, WorldBookNotFoundError
from nekoflow.worldbook.ids import new_id, now_iso
from nekoflow.worldbook.models import WorldBook, WorldBookEntry

_BOOK_META = ("name", "description", "character_ids", "enabled", "rules")
_ENTRY_FIELDS = tuple(WorldBookEntry.model_fields)


def _describe(n: int, data: Any) -> str:
    if isinstance(data, WorldBookEntry):
        ident, name = data.id, data.name
    elif isinstance(data, Mapping):
        ident, name = data.get("id", ""), data.get("name", "")
    else:
        ident, name = "", ""
    label = f"entry #{n}"
    if ident:
        label += f" id={ident!r}"
    if name:
        label += f" name={name!r}"
    return label


def validation_messages(exc: ValidationError) -> str:
    """``field: message; …`` for every error in ``exc``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(entry)'}: {err['msg']}" for err in exc.errors()
    )


def _entry_model(data: WorldBookEntry | Mapping[str, Any]) -> WorldBookEntry:
    if isinstance(data, WorldBookEntry):
        return data.model_copy(deep=True)
    if not isinstance(data, Mapping):
        raise InputError(
            f"an entry must be a dict or WorldBookEntry, got {type(data).__name__}", field="entry"
        )
    return WorldBookEntry.model_validate(dict(data))


def _entry_row(book_id: str, position: int, entry: WorldBookEntry) -> WorldBookEntryRow:
    return WorldBookEntryRow(book_id=book_id, position=position, **entry.model_dump())


def _entry_from_row(row: WorldBookEntryRow) -> WorldBookEntry:
    data = {f: getattr(row, f) for f in _ENTRY_FIELDS}
    data["rules"] = data["rules"] or {}  # NULL in a database made by an older release
    return WorldBookEntry.model_validate(data)


def _book_from_rows(row: WorldBookRow, entries: Iterable[WorldBookEntryRow]) -> WorldBook:
    book = WorldBook(
        id=row.id,
        name=row.name,
        description=row.description,
        character_ids=list(row.character_ids or []),
        enabled=row.enabled,
        created_at=row.created_at,
        updated_at=row.updated_at,
        rules=row.rules or {},
        entries=[_entry_from_row(e) for e in entries],
    )
    book._revision = row.revision
    return book


#: Where ``WorldBookStore(base_dir)`` keeps its SQLite database (the seed kept
#: ``data/world_books.json`` under the same base directory).
BASE_DIR_DB = ("data", "world_books.db")


def _engine_for(target: Engine | Connection | str | os.PathLike[str] | None) -> Engine | Connection:
    if target is None:
        return get_engine()
    if isinstance(target, Engine | Connection):
        return target
    if isinstance(target, str | os.PathLike):
        text = os.fspath(target)
        if "://" in text:  # a database URL
            engine = make_engine(text)
        else:  # the seed's ``WorldBookStore(base_dir)``
            path = Path(text, *BASE_DIR_DB)
            path.parent.mkdir(parents=True, exist_ok=True)
            engine = make_engine(f"sqlite:///{path}")
        create_all(engine)
        return engine
    raise InputError(
        "WorldBookStore wants an SQLAlchemy Engine or Connection, a database URL or a base "
        f"directory, got {type(target).__name__}",
        field="engine",
    )


class WorldBookStore:
    """CRUD over world books and entries in the SQL database.

    ``WorldBookStore()`` uses the process engine (``NEKOFLOW_DATABASE_URL``);
    ``WorldBookStore(engine)`` a given engine; ``WorldBookStore("postgresql://…")`` a database URL;
    and, as in the seed, ``WorldBookStore(base_dir)`` a SQLite database at
    ``<base_dir>/data/world_books.db`` (tables created when missing).
    ``WorldBookStore(connection)`` works on a connection: inside its open transaction
    (``engine.begin()``) every write joins that transaction and commits nothing (a failing write
    rolls it all back), so a book is written together with other rows, all or nothing.
    """

    def __init__(self, engine: Engine | Connection | str | os.PathLike[str] | None = None) -> None:
        self._engine = _engine_for(engine)

    # ------------------------------------------------------------------ books

    def list_all(self) -> list[WorldBook]:
        """Every world book with its entries, in stored order."""
        with Session(self._engine) as s:
            books = s.exec(select(WorldBookRow).order_by(WorldBookRow.position, WorldBookRow.id))
            rows = list(books)
            entries = s.exec(
                select(WorldBookEntryRow).order_by(
                    WorldBookEntryRow.book_id, WorldBookEntryRow.position, WorldBookEntryRow.id
                )
            )
            by_book: dict[str, list[WorldBookEntryRow]] = {}
            for e in entries:
                by_book.setdefault(e.book_id, []).append(e)
            return [_book_from_rows(r, by_book.get(r.id, [])) for r in rows]

    def get(self, book_id: str) -> WorldBook | None:
        """One world book with its entries, or None."""
        with Session(self._engine) as s:
            row = s.get(WorldBookRow, book_id)
            if row is None:
                return None
            return _book_from_rows(row, self._entry_rows(s, book_id))

    def create(
        self,
        name: str,
        description: str = "",
        character_ids: Sequence[str] | None = None,
        enabled: bool = True,
        *,
        id: str | None = None,
        entries: Sequence[WorldBookEntry | Mapping[str, Any]] = (),
    ) -> WorldBook:
        """Create a book (and optionally its first entries) and return it."""
        stamp = now_iso()
        book = WorldBook(
            id=id or new_id(),
            name=name,
            description=description,
            character_ids=list(character_ids or []),
            enabled=enabled,
            created_at=stamp,
            updated_at=stamp,
        )
        prepared = self._prepare_entries(entries, existing=set(), stamp=stamp)
        with session_scope(self._engine) as s:
            if s.get(WorldBookRow, book.id) is not None:
                raise InputError(f"world book {book.id!r} already exists", field="id")
            s.add(self._book_row(s, book))
            s.flush()
            for n, entry in enumerate(prepared):
                s.add(_entry_row(book.id, n, entry))
        return self.get(book.id)  # type: ignore[return-value]

    def update(self, book_id: str, **fields: Any) -> WorldBook | None:
        """Change a book's name, description, character_ids, enabled or rules; None if missing."""
        for key in fields:
            if key not in _BOOK_META:
                raise InputError(
                    f"cannot update world book field {key!r} (allowed: {', '.join(_BOOK_META)})",
                    field=key,
                )
        with session_scope(self._engine) as s:
            row = s.get(WorldBookRow, book_id)
            if row is None:
                return None
            current = {k: getattr(row, k) for k in _BOOK_META}
            current["rules"] = current["rules"] or {}
            checked = WorldBook.model_validate({**current, **fields})
            for key in fields:
                value = getattr(checked, key)
                setattr(row, key, value.model_dump() if key == "rules" else value)
            self._touch(row)
        return self.get(book_id)

    def delete(self, book_id: str) -> bool:
        """Delete a book and its entries; False if it did not exist."""
        with session_scope(self._engine) as s:
            row = s.get(WorldBookRow, book_id)
            if row is None:
                return False
            s.execute(delete(WorldBookEntryRow).where(WorldBookEntryRow.book_id == book_id))
            s.delete(row)
        return True

    # ------------------------------------------------------------------ entries

    def list_entries(self, book_id: str) -> list[WorldBookEntry] | None:
        """A book's entries in order; None if the book does not exist."""
        with Session(self._engine) as s:
            if s.get(WorldBookRow, book_id) is None:
                return None
            return [_entry_from_row(r) for r in self._entry_rows(s, book_id)]

    def add_entry(
        self, book_id: str, entry_data: WorldBookEntry | Mapping[str, Any]
    ) -> WorldBookEntry:
        """Validate and append one entry (an id is generated when empty)."""
        return self.batch_add_entries(book_id, [entry_data], _single=True)[0]

    def batch_add_entries(
        self,
        book_id: str,
        entries: Sequence[WorldBookEntry | Mapping[str, Any]],
        *,
        _single: bool = False,
    ) -> list[WorldBookEntry]:
        """Validate every entry, then append them all in one transaction (or none of them)."""
        with session_scope(self._engine) as s:
            row = s.get(WorldBookRow, book_id)
            if row is None:
                raise WorldBookNotFoundError(book_id)
            existing = {r.id for r in self._entry_rows(s, book_id)}
            if _single:
                prepared = self._prepare_entries(entries, existing, now_iso(), raise_single=True)
            else:
                prepared = self._prepare_entries(entries, existing, now_iso())
            start = self._next_position(s, book_id)
            for n, entry in enumerate(prepared):
                s.add(_entry_row(book_id, start + n, entry))
            self._touch(row)
        return prepared

    def update_entry(
        self,
        book_id: str,
        entry_id: str,
        data: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> WorldBookEntry | None:
        """Change fields of one entry (validated as a whole); None if book or entry is missing."""
        changes = {**(data or {}), **fields}
        if "id" in changes and changes["id"] != entry_id:
            raise InputError("an entry's id cannot be changed", field="id")
        with session_scope(self._engine) as s:
            book = s.get(WorldBookRow, book_id)
            row = s.get(WorldBookEntryRow, (book_id, entry_id))
            if book is None or row is None:
                return None
            current = _entry_from_row(row).model_dump()
            updated = WorldBookEntry.model_validate(
                {**current, **changes, "created_at": current["created_at"], "updated_at": now_iso()}
            )
            for key, value in updated.model_dump().items():
                setattr(row, key, value)
            self._touch(book)
        return updated

    def delete_entry(self, book_id: str, entry_id: str) -> bool:
        """Delete one entry; False if book or entry is missing."""
        with session_scope(self._engine) as s:
            book = s.get(WorldBookRow, book_id)
            row = s.get(WorldBookEntryRow, (book_id, entry_id))
            if book is None or row is None:
                return False
            s.delete(row)
            self._touch(book)
        return True

    # ------------------------------------------------------------------ imports

    def import_books(self, books: Sequence[WorldBook], *, replace: bool = False) -> list[WorldBook]:
        """Write whole books in one transaction, keeping their ids, order and timestamps.

        A book whose id already exists is an error unless ``replace`` (then the stored book and
        all its entries are replaced). Nothing is written when anything is wrong.
        """
        problems: list[str] = []
        seen: set[str] = set()
        for n, book in enumerate(books):
            if not book.id:
                problems.append(f"book #{n} ({book.name!r}): id is empty")
            elif book.id in seen:
                problems.append(f"book {book.id!r}: appears twice")
            seen.add(book.id)
            ids = [e.id for e in book.entries]
            for e_n, entry in enumerate(book.entries):
                if not entry.id:
                    problems.append(f"book {book.id!r} {_describe(e_n, entry)}: id is empty")
            for dup in sorted({i for i in ids if i and ids.count(i) > 1}):
                problems.append(f"book {book.id!r}: entry id {dup!r} appears more than once")
        positions: dict[str, int] = {}
        with session_scope(self._engine) as s:
            for book in books:
                old = s.get(WorldBookRow, book.id) if book.id else None
                if old is not None:
                    positions[book.id] = old.position
                    if not replace:
                        problems.append(
                            f"book {book.id!r}: already exists (--replace overwrites it)"
                        )
                        continue
                    s.execute(delete(WorldBookEntryRow).where(WorldBookEntryRow.book_id == book.id))
                    s.execute(delete(WorldBookRow).where(WorldBookRow.id == book.id))
            if problems:
                raise WorldBookDataError(problems, field="world_books")
            s.flush()
            for book in books:
                s.add(self._book_row(s, book, position=positions.get(book.id)))
                s.flush()
                for n, entry in enumerate(book.entries):
                    s.add(_entry_row(book.id, n, entry))
        return [self.get(b.id) for b in books]  # type: ignore[misc]

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _entry_rows(s: Session, book_id: str) -> list[WorldBookEntryRow]:
        return list(
            s.exec(
                select(WorldBookEntryRow)
                .where(WorldBookEntryRow.book_id == book_id)
                .order_by(WorldBookEntryRow.position, WorldBookEntryRow.id)
            )
        )

    @staticmethod
    def _next_position(s: Session, book_id: str) -> int:
        top = s.exec(
            select(func.max(WorldBookEntryRow.position)).where(WorldBookEntryRow.book_id == book_id)
        ).one()
        return 0 if top is None else int(top) + 1

    @staticmethod
    def _book_row(s: Session, book: WorldBook, position: int | None = None) -> WorldBookRow:
        if position is None:
            top = s.exec(select(func.max(WorldBookRow.position))).one()
            position = 0 if top is None else int(top) + 1
        return WorldBookRow(
            id=book.id,
            position=position,
            name=book.name,
            description=book.description,
            character_ids=list(book.character_ids),
            enabled=book.enabled,
            created_at=book.created_at,
            updated_at=book.updated_at,
            rules=book.rules.model_dump(),
            revision=new_id(),
        )

    @staticmethod
    def _touch(row: WorldBookRow) -> None:
        row.updated_at = now_iso()
        row.revision = new_id()

    @staticmethod
    def _prepare_entries(
        entries: Sequence[WorldBookEntry | Mapping[str, Any]],
        existing: set[str],
        stamp: str,
        *,
        raise_single: bool = False,
    ) -> list[WorldBookEntry]:
        if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, Sequence):
            raise InputError("entries must be a list of entries", field="entries")
        problems: list[str] = []
        prepared: list[WorldBookEntry] = []
        taken = set(existing)
        for n, data in enumerate(entries):
            try:
                entry = _entry_model(data)
            except ValidationError as exc:
                if raise_single:
                    raise
                problems.append(f"{_describe(n, data)}: {validation_messages(exc)}")
                continue
            except InputError as exc:
                if raise_single:
                    raise
                problems.append(f"{_describe(n, data)}: {exc}")
                continue
            if not entry.id:
                entry.id = new_id()
            if entry.id in taken:
                msg = f"entry id {entry.id!r} already exists in this book"
                if raise_single:
                    raise InputError(msg, field="id")
                problems.append(f"{_describe(n, data)}: {msg}")
                continue
            taken.add(entry.id)
            entry.created_at = entry.created_at or stamp
            entry.updated_at = stamp
            prepared.append(entry)
        if problems:
            raise WorldBookDataError(problems)
        return prepared
