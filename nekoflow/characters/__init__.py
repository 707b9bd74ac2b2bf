"""Characters: adding, listing and importing SillyTavern character cards (V2/V3, JSON or PNG).

An imported card becomes a ``Role`` (name; description, personality, scenario and the card's
system prompt as the profile; first message) and its ``character_book`` becomes a world book
bound to the character. Initial relationship values may come from the card — under
``data.extensions.nekoflow.relationship``, ``data.extensions.relationship`` or a top-level
``relationship`` — with Chinese aliases (好感/好感度, 信任, 熟悉, 依赖, 安全感, 嫉妒) accepted;
anything missing takes the defaults (affection 50, trust 50, familiarity 30, dependency 30,
security 50, jealousy 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.errors import InputError
from nekoflow.storage.dialogue import Role
from nekoflow.turns.characters import normalize_relationship
from nekoflow.worldbook import WorldBook
from nekoflow.worldbook.importers import card_json_from_png, from_character_card
from nekoflow.worldbook.png import is_png
from nekoflow.worldbook.store import WorldBookStore


class CharacterCard(BaseModel):
    """What nekoflow takes from a character card."""

    name: str
    profile: str = ""
    first_message: str = ""
    relationship: dict[str, int] = Field(default_factory=dict)
    book: WorldBook | None = None
    warnings: list[str] = Field(default_factory=list)


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return value.strip() if isinstance(value, str) else ""


def profile_from_card(data: Mapping[str, Any]) -> str:
    """The profile prompt: system prompt, description, personality and scenario, labelled."""
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


def parse_card(raw: bytes) -> CharacterCard:
    """Read a V2/V3 card from JSON or PNG bytes; a malformed card is an ``InputError``."""
    if is_png(raw):
        doc = card_json_from_png(raw)
    else:
        import json

        try:
            doc = json.loads(raw.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise InputError(f"not valid JSON: {exc}", field="file") from exc
    if not isinstance(doc, Mapping):
        raise InputError("a character card is a JSON object", field="file")
    data = doc.get("data") if isinstance(doc.get("data"), Mapping) else doc
    name = _text(data, "name")
    if not name:
        raise InputError("the character card has no name", field="data.name")
    relationship = normalize_relationship(_relationship_source(doc, data))
    book = None
    warnings: list[str] = []
    if isinstance(data.get("character_book"), Mapping):
        report = from_character_card(doc)
        book = report.books[0]
        warnings = list(report.warnings)
    return CharacterCard(
        name=name,
        profile=profile_from_card(data),
        first_message=_text(data, "first_mes"),
        relationship=relationship,
        book=book,
        warnings=warnings,
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


def import_card(engine: Engine, raw: bytes) -> tuple[Role, WorldBook | None, list[str]]:
    """Create the Role of a card and store its character book; all or nothing.

    Everything is validated before anything is written; if storing the book fails, the role
    is removed again.
    """
    card = parse_card(raw)
    profile = card.profile
    if card.first_message:
        profile = (
            f"{profile}\n开场白:{card.first_message}" if profile else f"开场白:{card.first_message}"
        )
    role = add_character(engine, card.name, profile=profile, relationship=card.relationship)
    if card.book is None:
        return role, None, card.warnings
    try:
        [book] = WorldBookStore(engine).import_books([card.book])
    except InputError:
        with Session(engine) as s:
            stored = s.get(Role, role.id)
            if stored is not None:
                s.delete(stored)
                s.commit()
        raise
    return role, book, card.warnings
