"""The seed's ``world_books.json`` format: parse (validated, every problem reported) and dump.

Shape: ``{"world_books": {<book_id>: {id, name, description, character_ids, entries: {<entry_id>:
{…entry fields…}}, enabled, created_at, updated_at}}}``. A book's or entry's ``id`` may be omitted
(the key is used; in a list, a fresh id); when both are given they must agree.
``dump(parse(x))`` reproduces ``x`` for a file that spells out every field; missing fields come
back with their defaults. ``world_books`` may also be a list of books (the seed app's "export
all" bundle); a book's keys starting with ``_`` (export markers) and ``entry_count`` (added by the
API) are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from nekoflow.worldbook.errors import WorldBookDataError
from nekoflow.worldbook.ids import new_id
from nekoflow.worldbook.models import WorldBook, WorldBookEntry

FORMAT_KEY = "world_books"


def _messages(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(value)'}: {err['msg']}" for err in exc.errors()
    )


def _items(value: Any) -> Iterable[tuple[str, Any]]:
    """Entries/books may be given as an id → object mapping (the seed's form) or as a list."""
    if isinstance(value, Mapping):
        return [(str(k), v) for k, v in value.items()]
    return [(str(v.get("id", "")) if isinstance(v, Mapping) else "", v) for v in value]


def _check_id(key: str, data: dict[str, Any], what: str, problems: list[str]) -> None:
    given = data.get("id")
    if given in (None, ""):
        data["id"] = key or new_id()  # a list item without an id gets a fresh one
    elif key and given != key:
        problems.append(f"{what}: id {given!r} does not match its key {key!r}")


def parse_world_books(data: Any) -> list[WorldBook]:
    """Validate a ``world_books.json`` document into books; raises listing every bad item."""
    if not isinstance(data, Mapping) or not isinstance(data.get(FORMAT_KEY), Mapping | list):
        raise WorldBookDataError(
            [f"not a world_books.json document: expected an object with a {FORMAT_KEY!r} object"],
            field=FORMAT_KEY,
        )
    problems: list[str] = []
    books: list[WorldBook] = []
    for book_key, raw_book in _items(data[FORMAT_KEY]):
        label = f"book {book_key!r}"
        if not isinstance(raw_book, Mapping):
            problems.append(f"{label}: expected an object, got {type(raw_book).__name__}")
            continue
        # Export markers ("_export_version", "_exported_at", …) and the API's derived
        # "entry_count" are not book data: dropped, so exports and API answers import as is.
        book_data = {
            k: v
            for k, v in raw_book.items()
            if not (isinstance(k, str) and k.startswith("_")) and k != "entry_count"
        }
        _check_id(book_key, book_data, label, problems)
        raw_entries = book_data.pop("entries", {})
        if not isinstance(raw_entries, Mapping | list):
            problems.append(f"{label}: entries must be an object (id → entry) or a list")
            raw_entries = {}
        entries: list[WorldBookEntry] = []
        for n, (entry_key, raw_entry) in enumerate(_items(raw_entries)):
            name = raw_entry.get("name", "") if isinstance(raw_entry, Mapping) else ""
            elabel = f"{label} entry {entry_key or '#' + str(n)!r}" + (f" ({name})" if name else "")
            if not isinstance(raw_entry, Mapping):
                problems.append(f"{elabel}: expected an object, got {type(raw_entry).__name__}")
                continue
            entry_data = dict(raw_entry)
            _check_id(entry_key, entry_data, elabel, problems)
            try:
                entries.append(WorldBookEntry.model_validate(entry_data))
            except ValidationError as exc:
                problems.append(f"{elabel}: {_messages(exc)}")
        try:
            book = WorldBook.model_validate(book_data)
        except ValidationError as exc:
            problems.append(f"{label}: {_messages(exc)}")
            continue
        book.entries = entries
        books.append(book)
    if problems:
        raise WorldBookDataError(problems, field=FORMAT_KEY)
    return books


def dump_world_books(books: Iterable[WorldBook]) -> dict[str, Any]:
    """The ``world_books.json`` document for ``books`` (field order as in the seed)."""
    out: dict[str, Any] = {}
    for book in books:
        data = book.model_dump()
        data["entries"] = {e["id"]: e for e in data["entries"]}
        out[book.id] = data
    return {FORMAT_KEY: out}


def loads_strict(text: str | bytes) -> Any:
    """``json.loads`` that rejects duplicate object keys (they would silently drop entries)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in items:
            if k in out:
                raise ValueError(f"duplicate key {k!r} in JSON object")
            out[k] = v
        return out

    return json.loads(text, object_pairs_hook=pairs)
