"""Characters: adding, listing and importing SillyTavern character cards (V1/V2/V3, JSON or PNG).

An imported card becomes a ``Role`` whose ``card`` column keeps every field of the card
(:mod:`nekoflow.characters.card`; the prompt is assembled from it, see
``nekoflow.turns.prompting``), with a profile text for listings, and its ``character_book``
becomes a world book bound to the character. Initial relationship values may come from the
card — under ``data.extensions.nekoflow.relationship``, ``data.extensions.relationship`` or a
top-level ``relationship`` — with Chinese aliases (好感/好感度, 信任, 熟悉, 依赖, 安全感, 嫉妒)
accepted; anything missing takes the defaults (affection 50, trust 50, familiarity 30, dependency
30, security 50, jealousy 0).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.characters.card import CardData, FieldNote, card_fields, read_card
from nekoflow.characters.relationship import normalize_relationship
from nekoflow.errors import InputError
from nekoflow.storage.dialogue import Role
from nekoflow.worldbook import WorldBook, WorldBookRecallConfig
from nekoflow.worldbook.importers import card_json_from_png, from_character_card
from nekoflow.worldbook.png import is_png
from nekoflow.worldbook.store import WorldBookStore


class CharacterCard(BaseModel):
    """What nekoflow takes from a character card: the whole card, the profile, the book."""

    name: str
    profile: str = ""
    first_message: str = ""
    relationship: dict[str, int] = Field(default_factory=dict)
    book: WorldBook | None = None
    warnings: list[str] = Field(default_factory=list)
    card: CardData
    notes: list[FieldNote] = Field(default_factory=list)


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return value.strip() if isinstance(value, str) else ""


def profile_from_card(data: Mapping[str, Any]) -> str:
    """The profile text (for listings): system prompt, description, personality, scenario."""
    parts = []
    for key, label in (
        ("system_prompt", ""),
        ("description", "角色描述"),
        ("personality", "性格"),
        ("scenario", "场景"),
    ):
        text = _text(data, key)
        if text:
            parts.append(f"{label}:{text}" if label else text)
    return "\n".join(parts)


def _relationship_source(doc: Mapping[str, Any], data: Mapping[str, Any]) -> Mapping[str, Any]:
    ext = data.get("extensions") if isinstance(data.get("extensions"), Mapping) else {}
    for candidate in (
        (ext.get("nekoflow") or {}).get("relationship")
        if isinstance(ext.get("nekoflow"), Mapping)
        else None,
        ext.get("relationship"),
        data.get("relationship"),
        doc.get("relationship"),
    ):
        if isinstance(candidate, Mapping):
            return candidate
    return {}


def card_document(raw: bytes) -> Mapping[str, Any]:
    """The card's JSON object from JSON or PNG bytes (V3 ``ccv3`` chunk preferred)."""
    if is_png(raw):
        doc = card_json_from_png(raw)
    else:
        try:
            doc = json.loads(raw.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise InputError(f"not valid JSON: {exc}", field="file") from exc
    if not isinstance(doc, Mapping):
        raise InputError("a character card is a JSON object", field="file")
    return doc


def _book_card(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """The card as its book is read: its fields (V2/V3: ``data`` plus top-level ones it lacks)."""
    spec, data = card_fields(doc)
    return {"spec": spec, "data": data}


def parse_card(raw: bytes, config: WorldBookRecallConfig | None = None) -> CharacterCard:
    """Read a V1/V2/V3 card from JSON or PNG bytes; a malformed card is an ``InputError``.

    ``config``: the turn's recall config its book's budget notes measure against (default:
    the 8k-context budgets of ``lore_recall_config``)."""
    doc = card_document(raw)
    card, notes = read_card(doc)
    data = card_fields(doc)[1]
    relationship = normalize_relationship(_relationship_source(doc, data))
    if "relationship" in data or "relationship" in doc:
        notes.append(FieldNote(field="relationship", status="mapped", note="initial relationship"))
    book = None
    warnings: list[str] = []
    if data.get("character_book") is not None:  # an object: read_card checked it
        report = from_character_card(_book_card(doc), config=config)
        book = report.books[0]
        warnings = list(report.warnings)
    return CharacterCard(
        name=card.name,
        profile=profile_from_card(data),
        first_message=card.first_mes.strip(),
        relationship=relationship,
        book=book,
        warnings=warnings,
        card=card,
        notes=notes,
    )


def add_character(
    engine: Engine,
    name: str,
    *,
    profile: str = "",
    relationship: Mapping[str, Any] | None = None,
    strict: bool = False,
) -> Role:
    """Create a character; relationship keys may be aliases (好感, 信任度, …).

    Names are unique (turns, config.ini and re-review filters pick characters by name): a
    name already taken is an ``InputError``. ``strict`` rejects unknown relationship keys and
    values outside 0–100 instead of ignoring/clamping them (see ``normalize_relationship``).
    """
    name = name.strip()
    if not name:
        raise InputError("a character needs a name", field="name")
    values = normalize_relationship(relationship, strict=strict)
    with Session(engine, expire_on_commit=False) as s:
        taken = s.exec(select(Role.id).where(Role.name == name)).first()
        if taken is not None:
            raise InputError(
                f"a character named {name!r} exists already (id {taken})", field="name"
            )
        role = Role.new(name, profile_prompt=profile, initial_relationship=values)
        s.add(role)
        s.commit()
        s.refresh(role)
        return role


def list_characters(engine: Engine) -> list[Role]:
    """Every character, oldest first."""
    with Session(engine, expire_on_commit=False) as s:
        return list(s.exec(select(Role).order_by(col(Role.id))).all())


class CardImport(BaseModel):
    """What ``import_card_report`` did: the role, its book, the per-field notes, the warnings."""

    model_config = {"arbitrary_types_allowed": True}

    role: Role
    book: WorldBook | None = None
    notes: list[FieldNote] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    updated: bool = False
    removed_book: str | None = None


def _store_book(
    store: WorldBookStore, raw: bytes, book: WorldBook, book_id: str | None
) -> WorldBook:
    """Store the card's book; on an update it replaces the book the previous import made."""
    if book_id is not None and store.get(book_id) is not None:
        [book] = from_character_card(_book_card(card_document(raw)), book_id=book_id).books
        [stored] = store.import_books([book], replace=True)
        return stored
    [stored] = store.import_books([book])
    return stored


def import_card_report(
    engine: Engine,
    raw: bytes,
    *,
    update: bool = False,
    config: WorldBookRecallConfig | None = None,
) -> CardImport:
    """Create (or, with ``update``, refresh) the Role of a card and store its character book.

    Everything is validated before anything is written. A name already taken is an
    ``InputError`` unless ``update``: then the existing character keeps its id, conversations,
    memories and per-scope relationships, and gets the new card, profile and initial
    relationship; the world book of its previous import is replaced by the new card's book (or
    removed when the new card has none). The role and its book are written in one transaction:
    when anything fails, nothing is written (an update leaves the previous card and book).
    ``config``: the turn's recall config the book's budget notes measure against.
    """
    parsed = parse_card(raw, config)
    card = parsed.card
    relationship = normalize_relationship(parsed.relationship)
    with engine.begin() as conn, Session(conn, expire_on_commit=False) as s:
        existing = s.exec(select(Role).where(Role.name == parsed.name)).first()
        if existing is not None and not update:
            raise InputError(
                f"a character named {parsed.name!r} exists already (id {existing.id}); "
                "import with --update to replace its card",
                field="name",
            )
        old_book = (existing.card or {}).get("book_id") if existing is not None else None
        store = WorldBookStore(conn)  # its writes join this transaction
        book = None
        if parsed.book is not None:
            book = _store_book(store, raw, parsed.book, old_book)
            card.book_id = book.id
        removed = None
        if old_book and parsed.book is None:
            removed = old_book if store.delete(old_book) else None
        role = existing or Role.new(parsed.name, initial_relationship=relationship)
        role.card = card.model_dump(mode="json")
        role.profile_prompt = parsed.profile
        role.initial_relationship = relationship
        s.add(role)
        s.flush()
        s.refresh(role)
    return CardImport(
        role=role,
        book=book,
        notes=parsed.notes,
        warnings=parsed.warnings,
        updated=existing is not None,
        removed_book=removed,
    )


def import_card(
    engine: Engine, raw: bytes, *, update: bool = False
) -> tuple[Role, WorldBook | None, list[str]]:
    """Create the Role of a card and store its character book; all or nothing.

    See :func:`import_card_report` (which also returns the per-field notes).
    """
    result = import_card_report(engine, raw, update=update)
    return result.role, result.book, result.warnings
