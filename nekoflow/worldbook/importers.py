"""Import world books from files: the seed's ``world_books.json``, SillyTavern World Info JSON, and
the ``character_book`` of SillyTavern character cards (V2/V3 JSON, or PNG with a ``chara``/``ccv3``
text chunk holding base64 JSON).

Field mapping (SillyTavern → nekoflow):

* ``key``/``keys`` → ``keywords``; ``comment``/``name`` → ``name``; ``content`` → ``content``;
* ``constant`` → ``always_on``; ``disable`` (World Info) / ``enabled`` (cards) → ``enabled``;
* ``order`` (World Info) → ``priority``; cards: ``priority`` when given, else ``insertion_order``;
* ``caseSensitive``/``case_sensitive`` (null = SillyTavern's default, off) → ``case_sensitive``;
* ``cooldown`` → ``cooldown_turns``;
* selective secondary keys: kept only when ``match_mode="all"`` says exactly the same thing —
  AND ALL with a single primary key, or AND ANY with one primary and one secondary key; otherwise
  they are dropped and reported (the entry then fires on its primary keys alone);
* ``trigger_sources`` = ``["user", "history"]``: SillyTavern scans the user message and recent chat.

Everything else that is set to a non-default value (regex keys, probability, sticky, delay, groups,
insertion position/depth, whole-word matching, …) cannot be mapped and is listed in the report's
``warnings``. A malformed file is rejected whole: :class:`WorldBookDataError` names each bad entry.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from nekoflow.errors import InputError
from nekoflow.worldbook.errors import WorldBookDataError
from nekoflow.worldbook.formats import FORMAT_KEY, loads_strict, parse_world_books
from nekoflow.worldbook.ids import new_id, now_iso
from nekoflow.worldbook.models import WorldBook, WorldBookEntry
from nekoflow.worldbook.png import is_png, read_text_chunks

SourceFormat = Literal[
    "world_books.json", "sillytavern_world_info", "character_card_v2", "character_card_v3"
]

ST_TRIGGER_SOURCES = ["user", "history"]
AND_ANY, NOT_ALL, NOT_ANY, AND_ALL = 0, 1, 2, 3
_LOGIC_NAMES = {AND_ANY: "AND ANY", NOT_ALL: "NOT ALL", NOT_ANY: "NOT ANY", AND_ALL: "AND ALL"}

# Fields we map (or that only carry UI state); never reported.
_MAPPED = {
    "key", "keys", "keysecondary", "secondary_keys", "comment", "name", "content", "constant",
    "selective", "selectiveLogic", "order", "insertion_order", "priority", "disable", "enabled",
    "caseSensitive", "case_sensitive", "cooldown", "uid", "id", "displayIndex", "display_index",
    "addMemo", "extensions",
}  # fmt: skip
# Unmapped fields at these values behave like nekoflow anyway; other non-empty values are reported.
_HARMLESS = {
    "probability": 100,
    "useProbability": True,
    "depth": 4,
    "groupWeight": 100,
    "group_weight": 100,
    "position": ("before_char", 0),
    "role": 0,
    "selectiveLogic": AND_ANY,
}
_REGEX_KEY = re.compile(r"^/.+/[a-z]*$", re.S)


class ImportReport(BaseModel):
    """What an import produced: the books to store and what could not be mapped."""

    source_format: SourceFormat
    books: list[WorldBook]
    warnings: list[str] = Field(default_factory=list)

    @property
    def entry_count(self) -> int:
        """Number of entries over all books."""
        return sum(len(b.entries) for b in self.books)


def _harmless(key: str, value: Any) -> bool:
    if value in (None, False, 0, "", [], {}):
        return True
    default = _HARMLESS.get(key)
    if isinstance(default, tuple):
        return value in default
    return default is not None and value == default


class _EntryMapper:
    """Maps one SillyTavern entry (World Info or card style), collecting problems and warnings."""

    def __init__(self, label: str, raw: Mapping[str, Any], problems: list[str]) -> None:
        self.label = label
        self.raw = raw
        self.problems = problems
        self.warnings: list[tuple[str, str]] = []  # (what, label)

    def bad(self, msg: str) -> None:
        self.problems.append(f"{self.label}: {msg}")

    def note(self, what: str) -> None:
        self.warnings.append((what, self.label))

    def keys(self, field: str) -> list[str]:
        value = self.raw.get(field)
        if value is None:
            return []
        if isinstance(value, str):
            return [k.strip() for k in value.split(",") if k.strip()]
        if isinstance(value, list) and all(isinstance(k, str) for k in value):
            return [k for k in value if k.strip()]
        self.bad(f"{field} must be a list of strings, got {value!r}")
        return []

    def text(self, field: str) -> str:
        value = self.raw.get(field)
        if value is None:
            return ""
        if not isinstance(value, str):
            self.bad(f"{field} must be a string, got {type(value).__name__}")
            return ""
        return value

    def flag(self, field: str, default: bool, source: Mapping[str, Any] | None = None) -> bool:
        value = (self.raw if source is None else source).get(field)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.bad(f"{field} must be true or false, got {value!r}")
            return default
        return value

    def number(self, field: str, source: Mapping[str, Any] | None = None) -> int | None:
        value = (self.raw if source is None else source).get(field)
        if value is None or value == "":
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            self.bad(f"{field} must be an integer, got {value!r}")
            return None
        return int(value)

    def report_unmapped(self, fields: Mapping[str, Any], prefix: str = "") -> None:
        for key, value in fields.items():
            if key in _MAPPED or _harmless(key, value):
                continue
            self.note(f"{prefix}{key}={value!r} is not supported (ignored)")

    def secondary(
        self, primary: list[str], secondary: list[str], selective: bool, logic: int
    ) -> tuple[list[str], Literal["any", "all"]]:
        if not selective or not secondary:
            return primary, "any"
        if logic == AND_ALL and len(primary) == 1:
            return [*primary, *secondary], "all"
        if logic == AND_ANY and len(primary) == 1 and len(secondary) == 1:
            return [*primary, *secondary], "all"
        self.note(
            f"secondary keys with {_LOGIC_NAMES.get(logic, f'logic {logic}')} "
            f"({len(primary)} primary, {len(secondary)} secondary) cannot be expressed: "
            "dropped, the entry fires on its primary keys alone"
        )
        return primary, "any"

    def entry(self, **fields: Any) -> WorldBookEntry | None:
        for key in fields.get("keywords", []):
            if _REGEX_KEY.match(key):
                self.note(f"regex key {key!r} is matched as literal text")
                break
        try:
            return WorldBookEntry(**fields)
        except ValidationError as exc:
            self.bad("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()))
            return None


def _label(n: int, key: str, raw: Any) -> str:
    title = ""
    if isinstance(raw, Mapping):
        title = raw.get("comment") or raw.get("name") or ""
        title = title if isinstance(title, str) else ""
    return f"entry {key or '#' + str(n)!r}" + (f" ({title})" if title else "")


def _iter_entries(entries: Any, problems: list[str]) -> list[tuple[int, str, Any]]:
    if isinstance(entries, Mapping):
        return [(n, str(k), v) for n, (k, v) in enumerate(entries.items())]
    if isinstance(entries, list):
        return [
            (n, str(v.get("uid", v.get("id", n))) if isinstance(v, Mapping) else str(n), v)
            for n, v in enumerate(entries)
        ]
    problems.append(f"entries must be an object or a list, got {type(entries).__name__}")
    return []


def _summarize(pairs: list[tuple[str, str]]) -> list[str]:
    grouped: dict[str, list[str]] = {}
    for what, label in pairs:
        grouped.setdefault(what, []).append(label)
    out = []
    for what, labels in grouped.items():
        shown = ", ".join(labels[:5]) + (f" and {len(labels) - 5} more" if len(labels) > 5 else "")
        out.append(f"{what} — {shown}")
    return out


def _map_entries(
    entries: Any, book_id: str, *, card_style: bool
) -> tuple[list[WorldBookEntry], list[str], list[str]]:
    """Map SillyTavern entries; returns (entries, problems, warnings)."""
    problems: list[str] = []
    notes: list[tuple[str, str]] = []
    out: list[WorldBookEntry] = []
    used_ids: set[str] = set()
    for n, key, raw in _iter_entries(entries, problems):
        label = _label(n, key, raw)
        if not isinstance(raw, Mapping):
            problems.append(f"{label}: expected an object, got {type(raw).__name__}")
            continue
        m = _EntryMapper(label, raw, problems)
        ext = raw.get("extensions") or {}
        if not isinstance(ext, Mapping):
            m.bad("extensions must be an object")
            ext = {}
        if card_style:
            primary, secondary = m.keys("keys"), m.keys("secondary_keys")
            name = m.text("name") or m.text("comment")
            enabled = m.flag("enabled", True)
            selective = m.flag("selective", False)
            logic = m.number("selectiveLogic", ext) or AND_ANY
            prio, order = m.number("priority"), m.number("insertion_order")
            priority = prio if prio is not None else (order or 0)
            if prio is not None and order is not None and order != prio:
                m.note(f"insertion_order={order} is not kept (priority={prio} is used)")
            case = raw.get("case_sensitive", ext.get("case_sensitive"))
            cooldown = m.number("cooldown", ext)
            if raw.get("use_regex") is True:
                m.note("use_regex=True is not supported: keys are matched as literal text")
            m.report_unmapped({k: v for k, v in raw.items() if k != "use_regex"})
            m.report_unmapped(
                {k: v for k, v in ext.items() if k not in ("cooldown", "case_sensitive")},
                prefix="extensions.",
            )
        else:
            primary, secondary = m.keys("key"), m.keys("keysecondary")
            name = m.text("comment")
            enabled = not m.flag("disable", False)
            selective = m.flag("selective", True)
            logic = m.number("selectiveLogic") or AND_ANY
            priority = m.number("order") or 0
            case = raw.get("caseSensitive")
            cooldown = m.number("cooldown")
            m.report_unmapped(raw)
        if case is not None and not isinstance(case, bool):
            m.bad(f"case sensitivity must be true, false or null, got {case!r}")
            case = None
        keywords, mode = m.secondary(primary, secondary, selective, logic)
        entry_id = f"{book_id}-{key}"
        if entry_id in used_ids:
            m.bad(f"duplicate entry id {key!r}")
        used_ids.add(entry_id)
        entry = m.entry(
            id=entry_id,
            name=name,
            keywords=keywords,
            content=m.text("content"),
            enabled=enabled,
            priority=priority,
            case_sensitive=bool(case),
            match_mode=mode,
            trigger_sources=list(ST_TRIGGER_SOURCES),
            always_on=m.flag("constant", False),
            cooldown_turns=max(0, cooldown or 0),
        )
        if entry is not None:
            if not entry.keywords and not entry.always_on:
                m.note("no keys and not constant: the entry never fires")
            out.append(entry)
        notes.extend(m.warnings)
    return out, problems, _summarize(notes)


def from_sillytavern_world_info(
    doc: Mapping[str, Any], *, name: str = "", book_id: str | None = None, stamp: str = ""
) -> ImportReport:
    """A book from a SillyTavern World Info file (``{"entries": {uid: {...}}}``)."""
    book_id = book_id or new_id()
    entries, problems, warnings = _map_entries(doc.get("entries"), book_id, card_style=False)
    if problems:
        raise WorldBookDataError(problems)
    stamp = stamp or now_iso()
    for entry in entries:
        entry.created_at = entry.updated_at = stamp
    book = WorldBook(
        id=book_id,
        name=name or str(doc.get("name") or "SillyTavern World Info"),
        description=str(doc.get("description") or ""),
        entries=entries,
        created_at=stamp,
        updated_at=stamp,
    )
    return ImportReport(source_format="sillytavern_world_info", books=[book], warnings=warnings)


def from_character_card(
    doc: Mapping[str, Any], *, name: str = "", book_id: str | None = None, stamp: str = ""
) -> ImportReport:
    """The ``character_book`` of a V2/V3 character card, bound to the card's character name."""
    spec = doc.get("spec")
    data = doc.get("data") if isinstance(doc.get("data"), Mapping) else doc
    character_book = data.get("character_book")
    if not isinstance(character_book, Mapping):
        raise WorldBookDataError(
            ["the character card has no character_book (nothing to import)"],
            field="character_book",
        )
    book_id = book_id or new_id()
    entries, problems, warnings = _map_entries(
        character_book.get("entries"), book_id, card_style=True
    )
    if problems:
        raise WorldBookDataError([f"character_book {p}" for p in problems])
    for field in ("scan_depth", "token_budget", "recursive_scanning"):
        value = character_book.get(field)
        if not _harmless(field, value):
            warnings.append(f"character_book.{field}={value!r} is not supported (ignored)")
    character = data.get("name") if isinstance(data.get("name"), str) else ""
    stamp = stamp or now_iso()
    for entry in entries:
        entry.created_at = entry.updated_at = stamp
    book = WorldBook(
        id=book_id,
        name=name or str(character_book.get("name") or character or "character book"),
        description=str(character_book.get("description") or ""),
        character_ids=[character] if character else [],
        entries=entries,
        created_at=stamp,
        updated_at=stamp,
    )
    fmt: SourceFormat = "character_card_v3" if spec == "chara_card_v3" else "character_card_v2"
    return ImportReport(source_format=fmt, books=[book], warnings=warnings)


def card_json_from_png(data: bytes) -> Any:
    """The card JSON of a PNG character card (``ccv3`` chunk preferred over ``chara``)."""
    chunks = read_text_chunks(data)
    for key in ("ccv3", "chara"):
        if key in chunks:
            try:
                raw = base64.b64decode(chunks[key], validate=False)
                return loads_strict(raw.decode("utf-8"))
            except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
                raise InputError(
                    f"PNG {key!r} chunk is not base64-encoded JSON: {exc}", field="png"
                ) from exc
    raise InputError("PNG has no 'chara' or 'ccv3' text chunk (not a character card)", field="png")


def _first_entry(doc: Mapping[str, Any]) -> Any:
    entries = doc.get("entries")
    if isinstance(entries, Mapping):
        return next(iter(entries.values()), None)
    if isinstance(entries, list) and entries:
        return entries[0]
    return None


def _is_single_book(doc: Mapping[str, Any]) -> bool:
    """One book in the seed's own shape (the seed app's per-book export, or a book as the API
    returns it): an export marker, or entries that use the seed's field names."""
    if "_export_version" in doc:
        return True
    first = _first_entry(doc)
    return isinstance(first, Mapping) and ("keywords" in first or "trigger_sources" in first)


def _is_card_book(doc: Mapping[str, Any]) -> bool:
    entries = doc.get("entries")
    first = entries[0] if isinstance(entries, list) and entries else None
    return isinstance(first, Mapping) and "keys" in first


def parse_import(
    data: bytes, *, name: str = "", book_id: str | None = None, fallback_name: str = ""
) -> ImportReport:
    """Detect the format of a file's bytes and map it into books (nothing is stored here).

    ``name`` overrides the book name of SillyTavern imports; ``fallback_name`` (e.g. the file
    name) names a World Info book that carries no name of its own.
    """
    if is_png(data):
        doc = card_json_from_png(data)
        if not isinstance(doc, Mapping):
            raise InputError("the PNG card's JSON is not an object", field="png")
        return from_character_card(doc, name=name, book_id=book_id)
    else:
        try:
            doc = loads_strict(data.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise InputError(f"not valid JSON: {exc}", field="file") from exc
    if not isinstance(doc, Mapping):
        raise InputError("expected a JSON object at the top level", field="file")
    if FORMAT_KEY in doc:
        books = parse_world_books(doc)
        return ImportReport(source_format="world_books.json", books=books)
    if doc.get("spec") in ("chara_card_v2", "chara_card_v3") or isinstance(
        doc.get("data"), Mapping
    ):
        return from_character_card(doc, name=name, book_id=book_id)
    if "character_book" in doc:
        return from_character_card(doc, name=name, book_id=book_id)
    if "entries" in doc:
        if _is_single_book(doc):
            single = {**doc, "id": book_id or doc.get("id") or new_id()}
            if name:
                single["name"] = name
            books = parse_world_books({FORMAT_KEY: [single]})
            return ImportReport(source_format="world_books.json", books=books)
        if _is_card_book(doc):
            return from_character_card(
                {"data": {"character_book": doc}}, name=name, book_id=book_id
            )
        return from_sillytavern_world_info(
            doc, name=name or str(doc.get("name") or fallback_name), book_id=book_id
        )
    raise InputError(
        "unknown file format: expected world_books.json, SillyTavern World Info "
        "or a character card",
        field="file",
    )
