"""SillyTavern character cards (V1, V2, V3) read into :class:`CardData`, with a per-field report.

Pure: takes the card's JSON object, returns the data and a report; no I/O. Every field of the
card is kept: the spec fields nekoflow uses in the prompt (description, personality, scenario,
first_mes, alternate_greetings, mes_example, system_prompt, post_history_instructions,
``extensions.depth_prompt``, V3 nickname), the ones it stores without using them (creator_notes —
the specs say it must not reach the prompt — tags, creator, character_version, V3 source /
assets / dates / group-only greetings), other extensions raw (``extensions``) and unknown fields
raw (``other``). The report says per field whether it was *kept* (used as written), *mapped*
(turned into something of nekoflow's: the role name, the world book, relationship values) or
*not used* (stored raw only), so an import never drops anything silently.

V1 cards carry the fields at the top level; V2/V3 cards in ``data`` (their top-level copies of
the V1 fields are compatibility duplicates, reported as such).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from nekoflow.errors import InputError

__all__ = ["CardData", "DepthPrompt", "FieldNote", "read_card"]

V2_SPECS = ("chara_card_v2", "chara_card_v3")
"""The specs whose fields live in ``data`` (an object)."""

DepthRole = Literal["system", "user", "assistant"]
Status = Literal["kept", "mapped", "not used", "empty"]

_TEXT_FIELDS = (
    "description",
    "personality",
    "scenario",
    "first_mes",
    "mes_example",
    "system_prompt",
    "post_history_instructions",
    "creator_notes",
    "creator",
    "character_version",
    "nickname",
)
_LIST_FIELDS = ("alternate_greetings", "group_only_greetings", "tags")
_USED = {
    "description": "character definition",
    "personality": "character definition",
    "scenario": "character definition",
    "first_mes": "first message of a new conversation",
    "alternate_greetings": "selectable first messages",
    "mes_example": "example dialogue",
    "system_prompt": "replaces the main prompt ({{original}} keeps it)",
    "post_history_instructions": "last instruction after the chat history",
    "nickname": "{{char}}",
}
_STORED = {
    "creator_notes": "for people, never sent to the model (spec)",
    "creator": "stored",
    "character_version": "stored",
    "tags": "stored",
    "group_only_greetings": "stored (nekoflow has no group chats of characters)",
}
_EXTENSION_NOTES = {
    "world": "name of the linked World Info book: import it with `nekoflow worldbook import`",
    "regex_scripts": "SillyTavern regex scripts are not run (stored raw)",
    "tavern_helper": "TavernHelper scripts (JavaScript) are not run (stored raw)",
    "talkativeness": "group-chat setting (stored raw)",
}
_V1_UI = {"avatar", "chat", "create_date", "talkativeness", "fav", "last_mes", "creatorcomment"}


class DepthPrompt(BaseModel):
    """The character's note (``extensions.depth_prompt``): text inserted at a depth of the chat."""

    prompt: str = ""
    depth: int = Field(default=4, ge=0)
    role: DepthRole = "system"


class CardData(BaseModel):
    """Everything a character card says (what ``Role.card`` stores)."""

    spec: str = "chara_card_v1"
    name: str
    description: str = ""
    personality: str = ""
    scenario: str = ""
    first_mes: str = ""
    alternate_greetings: list[str] = Field(default_factory=list)
    group_only_greetings: list[str] = Field(default_factory=list)
    mes_example: str = ""
    system_prompt: str = ""
    post_history_instructions: str = ""
    creator_notes: str = ""
    creator: str = ""
    character_version: str = ""
    nickname: str = ""
    tags: list[str] = Field(default_factory=list)
    depth_prompt: DepthPrompt | None = None
    extensions: dict[str, Any] = Field(default_factory=dict)
    other: dict[str, Any] = Field(default_factory=dict)
    book_id: str | None = None

    def greetings(self) -> list[str]:
        """The first message then the alternate greetings (index 0 = ``first_mes``)."""
        return [self.first_mes, *self.alternate_greetings]


class FieldNote(BaseModel):
    """What the import did with one field of the card."""

    field: str
    status: Status
    note: str = ""


def _path(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def _text(data: Mapping[str, Any], key: str, prefix: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool) and key.endswith("version"):
        return str(value)
    if not isinstance(value, str):
        raise InputError(f"{key} must be a string", field=_path(prefix, key))
    return value


def _strings(data: Mapping[str, Any], key: str, prefix: str) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if isinstance(value, str):  # some exporters write one tag/greeting as a string
        return [value] if value.strip() else []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{key} must be a list of strings", field=_path(prefix, key))
    return list(value)


def _depth_prompt(ext: Mapping[str, Any], prefix: str) -> DepthPrompt | None:
    raw = ext.get("depth_prompt")
    field = _path(prefix, "extensions.depth_prompt")
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InputError("depth_prompt must be an object {prompt, depth, role}", field=field)
    prompt = raw.get("prompt") or ""
    if not isinstance(prompt, str):
        raise InputError("depth_prompt.prompt must be a string", field=f"{field}.prompt")
    depth = raw.get("depth", 4)
    try:
        depth = int(depth)
    except (TypeError, ValueError):
        raise InputError(
            "depth_prompt.depth must be a whole number", field=f"{field}.depth"
        ) from None
    if depth < 0:
        raise InputError("depth_prompt.depth must be 0 or more", field=f"{field}.depth")
    role = raw.get("role") or "system"
    if role not in ("system", "user", "assistant"):
        raise InputError(
            "depth_prompt.role must be system, user or assistant", field=f"{field}.role"
        )
    return DepthPrompt(prompt=prompt, depth=depth, role=role)


def _spec(doc: Mapping[str, Any]) -> tuple[str, Mapping[str, Any], str]:
    spec = doc.get("spec")
    data = doc.get("data")
    if isinstance(data, Mapping):
        name = spec if isinstance(spec, str) and spec else "chara_card_v2"
        return name, data, "data"
    if spec in V2_SPECS:
        got = type(data).__name__ if "data" in doc else "nothing"
        raise InputError(
            f"a {spec} card keeps its fields in data, which must be an object (got {got})",
            field="data",
        )
    return "chara_card_v1", doc, ""


def _book(data: Mapping[str, Any], field: str) -> Mapping[str, Any] | None:
    """The card's character_book (None when absent); anything but an object is an error."""
    book = data.get("character_book")
    if book is None or isinstance(book, Mapping):
        return book
    raise InputError(
        f"character_book must be an object {{entries: [...]}}, got {type(book).__name__}",
        field=field,
    )


def read_card(doc: Mapping[str, Any]) -> tuple[CardData, list[FieldNote]]:
    """The card's data and what the import did with each field; a bad field is an InputError."""
    spec, data, prefix = _spec(doc)
    notes: list[FieldNote] = []
    name = _text(data, "name", prefix).strip()
    if not name:
        raise InputError("the character card has no name", field=_path(prefix, "name"))
    if len(name) > 200:
        raise InputError("a character name has at most 200 characters", field=_path(prefix, "name"))
    notes.append(FieldNote(field=_path(prefix, "name"), status="mapped", note="the role's name"))
    values: dict[str, Any] = {k: _text(data, k, prefix) for k in _TEXT_FIELDS}
    values.update({k: _strings(data, k, prefix) for k in _LIST_FIELDS})
    if not values["creator_notes"] and isinstance(doc.get("creatorcomment"), str):
        values["creator_notes"] = doc["creatorcomment"]
    ext_raw = data.get("extensions")
    if ext_raw is not None and not isinstance(ext_raw, Mapping):
        raise InputError("extensions must be an object", field=_path(prefix, "extensions"))
    ext = dict(ext_raw or {})
    depth = _depth_prompt(ext, prefix)
    for key in (*_TEXT_FIELDS, *_LIST_FIELDS):
        field = _path(prefix, key)
        if not values[key] or (isinstance(values[key], str) and not values[key].strip()):
            if key in data:
                notes.append(FieldNote(field=field, status="empty"))
            continue
        if key in _USED:
            notes.append(FieldNote(field=field, status="kept", note=_USED[key]))
        else:
            notes.append(FieldNote(field=field, status="not used", note=_STORED[key]))
    notes.extend(_extension_notes(ext, depth, prefix))
    book_field = _path(prefix, "character_book")
    if _book(data, book_field) is not None:
        notes.append(
            FieldNote(
                field=book_field,
                status="mapped",
                note="world book bound to the character (entries reported below)",
            )
        )
    elif "character_book" in data:
        notes.append(FieldNote(field=book_field, status="empty"))
    known = {"name", "extensions", "character_book", *_TEXT_FIELDS, *_LIST_FIELDS}
    other: dict[str, Any] = {k: v for k, v in data.items() if k not in known}
    for key in other:
        note = "client state, stored raw" if key in _V1_UI else "stored raw"
        notes.append(FieldNote(field=_path(prefix, key), status="not used", note=note))
    if prefix:
        for key, value in doc.items():
            if key in ("spec", "spec_version", "data"):
                continue
            if key in data or key in known or key == "creatorcomment":
                twin = "creator_notes" if key == "creatorcomment" else key
                notes.append(
                    FieldNote(field=key, status="not used", note=f"duplicate of data.{twin}")
                )
            else:
                other.setdefault(f"top.{key}", value)
                notes.append(FieldNote(field=key, status="not used", note="stored raw"))
    card = CardData(spec=spec, name=name, depth_prompt=depth, extensions=ext, other=other, **values)
    return card, notes


def _extension_notes(ext: Mapping[str, Any], depth: DepthPrompt | None, prefix: str) -> list:
    notes: list[FieldNote] = []
    for key, value in ext.items():
        field = _path(prefix, f"extensions.{key}")
        if key == "depth_prompt":
            if depth is not None and depth.prompt.strip():
                notes.append(
                    FieldNote(
                        field=field,
                        status="kept",
                        note=f"character's note at depth {depth.depth} as {depth.role}",
                    )
                )
            else:
                notes.append(FieldNote(field=field, status="empty"))
        elif key in ("relationship", "nekoflow"):
            notes.append(FieldNote(field=field, status="mapped", note="initial relationship"))
        elif value in (None, "", [], {}, False):
            notes.append(FieldNote(field=field, status="empty"))
        else:
            note = _EXTENSION_NOTES.get(key, "stored raw")
            notes.append(FieldNote(field=field, status="not used", note=note))
    return notes
