"""Import world books from files: the seed's ``world_books.json``, SillyTavern World Info JSON, and
the ``character_book`` of SillyTavern character cards (V2/V3 JSON, or PNG with a ``chara``/``ccv3``
text chunk holding base64 JSON).

Entries are mapped by :mod:`nekoflow.worldbook.st_import` (every SillyTavern field mapped, kept
for export or reported by entry). File-level settings map onto ``book.rules``: ``scan_depth``,
``token_budget``, ``recursive_scanning`` (SillyTavern's default, on, when the file does not say),
and everything else at the top level (name, description, ``extensions``, ``folders``…) is kept
for export. Entries longer than the budget a turn gives them (:func:`budget_warnings`) are
reported with the budget they need, and so are the always-on entries that cannot fit with the
always-on entries ranked above them (:func:`always_on_warnings`). A malformed file is rejected
whole: :class:`WorldBookDataError` names each bad entry.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from nekoflow.errors import InputError
from nekoflow.macros import unknown_macros
from nekoflow.tokens import estimate_tokens
from nekoflow.worldbook.budgets import lore_recall_config
from nekoflow.worldbook.errors import WorldBookDataError
from nekoflow.worldbook.formats import FORMAT_KEY, loads_strict, parse_world_books
from nekoflow.worldbook.hits import Hit
from nekoflow.worldbook.ids import new_id, now_iso
from nekoflow.worldbook.models import ALWAYS_SOURCE, WorldBook, WorldBookRecallConfig
from nekoflow.worldbook.png import CARD_KEYWORDS, is_png, read_text_chunks
from nekoflow.worldbook.rules import BookRules
from nekoflow.worldbook.selection import apply_budgets
from nekoflow.worldbook.st_import import map_entries

SourceFormat = Literal[
    "world_books.json", "sillytavern_world_info", "character_card_v2", "character_card_v3"
]


class ImportReport(BaseModel):
    """What an import produced: the books to store and what could not be mapped."""

    source_format: SourceFormat
    books: list[WorldBook]
    warnings: list[str] = Field(default_factory=list)

    @property
    def entry_count(self) -> int:
        """Number of entries over all books."""
        return sum(len(b.entries) for b in self.books)


_BOOK_SETTINGS = ("scan_depth", "token_budget", "recursive_scanning")


def _book_rules(doc: Mapping[str, Any], source_format: str, label: str) -> BookRules:
    """A book's rules from a World Info file's (or character_book's) top-level fields."""
    problems: list[str] = []
    values: dict[str, Any] = {}
    for field in _BOOK_SETTINGS:
        value = doc.get(field)
        if value is None:
            continue
        if field == "recursive_scanning":
            if not isinstance(value, bool):
                problems.append(f"{label}{field} must be true or false, got {value!r}")
            values[field] = value
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
            problems.append(f"{label}{field} must be a non-negative integer, got {value!r}")
        else:
            values[field] = value
    if problems:
        raise WorldBookDataError(problems, field="world_info")
    values.setdefault("recursive_scanning", True)  # SillyTavern's default
    source = {k: v for k, v in doc.items() if k != "entries"}
    return BookRules(source_format=source_format, source=source, **values)


def budget_warnings(book: WorldBook, config: WorldBookRecallConfig | None = None) -> list[str]:
    """One line per entry longer than the whole budget a turn gives it (``config``: the turn's,
    by default :func:`~nekoflow.worldbook.budgets.lore_recall_config`), naming what it needs."""
    cfg = config or lore_recall_config()
    out = []
    for entry in book.entries:
        if entry.rules.ignore_budget or not entry.content:
            continue
        cls_name, cls_chars = (
            ("always", cfg.max_always_chars)
            if entry.always_on
            else ("keyword", cfg.max_keyword_chars)
        )
        chars = len(entry.content)
        tokens = estimate_tokens(entry.content)
        needs: list[str] = []
        if chars > min(cls_chars, cfg.max_total_chars):
            needs.append(
                f"{chars} chars (the {cls_name} budget is {min(cls_chars, cfg.max_total_chars)})"
            )
        token_limits = [
            (f"{cfg.max_total_tokens} lore tokens", cfg.max_total_tokens),
            (f"the book's token_budget {book.rules.token_budget}", book.rules.token_budget or 0),
        ]
        over = [name for name, limit in token_limits if limit and tokens > limit]
        if over:
            needs.append(f"{tokens} tokens (over {' and '.join(over)})")
        if needs:
            fate = (
                "cut to the budget when first in line, else skipped"
                if cfg.oversize == "cut"
                else "skipped"
            )
            out.append(
                f"entry {entry.id!r} ({entry.name or 'unnamed'}) needs {'; '.join(needs)}: "
                f"at turn time it is {fate}"
            )
    return out


def macro_warnings(book: WorldBook) -> list[str]:
    """One warning per entry whose content holds macros nekoflow does not know (an extension's,
    such as MVU's ``{{format_message_variable::…}}``): they reach the model as written unless
    ``NEKOFLOW_UNKNOWN_MACROS=strip``."""
    out = []
    for entry in book.entries:
        found = unknown_macros(entry.content)
        if found:
            shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
            out.append(
                f"entry {entry.id!r} ({entry.name or 'unnamed'}): unknown macros {shown} are "
                "sent as written (NEKOFLOW_UNKNOWN_MACROS=strip removes them)"
            )
    return out


def always_on_warnings(book: WorldBook, config: WorldBookRecallConfig | None = None) -> list[str]:
    """The always-on entries that cannot fit with the always-on entries ranked above them.

    Every enabled always-on entry fires on every turn, and the budgets walk them in rank order
    (:func:`~nekoflow.worldbook.selection.apply_budgets`), so one that does not fit what those
    above it leave is skipped on every turn, whatever the message (probability and inclusion
    groups aside). Returns a summary line, then one line per such entry naming the budget and what
    it needs; nothing when they all fit.
    """
    cfg = config or lore_recall_config()
    hits = [
        Hit(book, 0, entry, n, [ALWAYS_SOURCE], {})
        for n, entry in enumerate(book.entries)
        if entry.enabled and entry.always_on and entry.content
    ]
    hits.sort(key=Hit.rank)
    taken, lost = apply_budgets(hits, cfg)
    ranks = {id(h.entry): h.rank() for h in hits}
    above_of = {
        id(d.entry): [h.entry.name or h.entry.id for h, _ in taken if h.rank() < ranks[id(d.entry)]]
        for d in lost
    }
    lost = [d for d in lost if above_of[id(d.entry)]]  # alone, it is budget_warnings' case
    if not lost:
        return []
    token_limits = [t for t in (cfg.max_total_tokens, book.rules.token_budget) if t]
    token_room = f"{min(token_limits)} lore tokens" if token_limits else "no token limit"
    chars = sum(len(h.entry.content) for h in hits)
    tokens = sum(estimate_tokens(h.entry.content) for h in hits)
    out = [
        f"the {len(hits)} always-on entries need {chars} chars / {tokens} tokens together; a turn "
        f"gives them {min(cfg.max_always_chars, cfg.max_total_chars)} chars (always budget) and "
        f"{token_room}: {len(lost)} cannot fit with the others and never reach the prompt"
    ]
    budgets = {
        "always": f"the always budget ({cfg.max_always_chars} chars)",
        "total": f"the total lore budget ({cfg.max_total_chars} chars)",
        "tokens": f"the token budget ({token_room})",
    }
    for drop in lost:
        entry = drop.entry
        if drop.reason == "max_entries":
            why = f"they fill max_entries ({cfg.max_entries})"
        else:
            x = drop.extra
            why = (
                f"it needs {x['needed']} {x['unit']}, they leave {x['available']} of "
                f"{budgets.get(x['budget'], x['budget'])}"
            )
        out.append(
            f"always-on entry {entry.id!r} ({entry.name or 'unnamed'}) cannot fit with the "
            f"always-on entries ranked above it ({', '.join(above_of[id(entry)])}): {why}; at turn "
            "time it is skipped"
        )
    return out


def from_sillytavern_world_info(
    doc: Mapping[str, Any],
    *,
    name: str = "",
    book_id: str | None = None,
    stamp: str = "",
    config: WorldBookRecallConfig | None = None,
) -> ImportReport:
    """A book from a SillyTavern World Info file (``{"entries": {uid: {...}}}``)."""
    book_id = book_id or new_id()
    entries, problems, warnings = map_entries(doc.get("entries"), book_id, card_style=False)
    if problems:
        raise WorldBookDataError(problems)
    rules = _book_rules(doc, "world_info", "")
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
        rules=rules,
    )
    warnings += budget_warnings(book, config) + always_on_warnings(book, config)
    warnings += macro_warnings(book)
    return ImportReport(source_format="sillytavern_world_info", books=[book], warnings=warnings)


def from_character_card(
    doc: Mapping[str, Any],
    *,
    name: str = "",
    book_id: str | None = None,
    stamp: str = "",
    config: WorldBookRecallConfig | None = None,
) -> ImportReport:
    """The ``character_book`` of a V2/V3 character card, bound to the card's character name."""
    spec = doc.get("spec")
    wrapped = isinstance(doc.get("data"), Mapping)
    if not wrapped and spec in ("chara_card_v2", "chara_card_v3"):
        got = type(doc.get("data")).__name__ if "data" in doc else "nothing"
        raise InputError(
            f"a {spec} card keeps its fields in data, which must be an object (got {got})",
            field="data",
        )
    data = doc["data"] if wrapped else doc
    character_book = data.get("character_book")
    field = "data.character_book" if wrapped else "character_book"
    if character_book is None and wrapped:  # data lacks it: the top-level one is the card's
        character_book, field = doc.get("character_book"), "character_book"
    if character_book is None:
        raise WorldBookDataError(
            ["the character card has no character_book (nothing to import)"],
            field="character_book",
        )
    if not isinstance(character_book, Mapping):
        raise WorldBookDataError(
            [f"{field} must be an object {{entries: [...]}}, got {type(character_book).__name__}"],
            field=field,
        )
    book_id = book_id or new_id()
    entries, problems, warnings = map_entries(
        character_book.get("entries"), book_id, card_style=True
    )
    if problems:
        raise WorldBookDataError([f"character_book {p}" for p in problems])
    rules = _book_rules(character_book, "character_book", "character_book.")
    named = data.get("name") if data.get("name") is not None else doc.get("name")
    character = named if isinstance(named, str) else ""
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
        rules=rules,
    )
    warnings += budget_warnings(book, config) + always_on_warnings(book, config)
    warnings += macro_warnings(book)
    fmt: SourceFormat = "character_card_v3" if spec == "chara_card_v3" else "character_card_v2"
    return ImportReport(source_format=fmt, books=[book], warnings=warnings)


def card_json_from_png(data: bytes) -> Any:
    """The card JSON of a PNG character card (``ccv3`` chunk preferred over ``chara``).

    Chunk keywords are compared lower-cased, as SillyTavern does (``Chara`` is a card too); the
    first chunk of a keyword wins. Only those two chunks are decompressed, each size-limited.
    """
    chunks = read_text_chunks(data, CARD_KEYWORDS)  # nothing else is inflated
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
    data: bytes,
    *,
    name: str = "",
    book_id: str | None = None,
    fallback_name: str = "",
    config: WorldBookRecallConfig | None = None,
) -> ImportReport:
    """Detect the format of a file's bytes and map it into books (nothing is stored here).

    ``name`` overrides the book name of SillyTavern imports; ``fallback_name`` (e.g. the file
    name) names a World Info book that carries no name of its own; ``config`` is the turn's
    recall config the budget warnings measure against.
    """
    if is_png(data):
        doc = card_json_from_png(data)
        if not isinstance(doc, Mapping):
            raise InputError("the PNG card's JSON is not an object", field="png")
        return from_character_card(doc, name=name, book_id=book_id, config=config)
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
        return from_character_card(doc, name=name, book_id=book_id, config=config)
    if "character_book" in doc or ("first_mes" in doc and "entries" not in doc):
        # a card (V1 cards have no spec): its book, or a clear "no character_book"
        return from_character_card(doc, name=name, book_id=book_id, config=config)
    if "entries" in doc:
        if _is_single_book(doc):
            single = {**doc, "id": book_id or doc.get("id") or new_id()}
            if name:
                single["name"] = name
            books = parse_world_books({FORMAT_KEY: [single]})
            return ImportReport(source_format="world_books.json", books=books)
        if _is_card_book(doc):
            return from_character_card(
                {"data": {"character_book": doc}}, name=name, book_id=book_id, config=config
            )
        return from_sillytavern_world_info(
            doc,
            name=name or str(doc.get("name") or fallback_name),
            book_id=book_id,
            config=config,
        )
    raise InputError(
        "unknown file format: expected world_books.json, SillyTavern World Info "
        "or a character card",
        field="file",
    )
