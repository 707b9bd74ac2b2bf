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

V1 cards carry the fields at the top level; V2/V3 cards in ``data``. A V2/V3 card's top-level
copy of a field is a compatibility duplicate when it equals ``data``'s; when it differs, ``data``
wins (the spec makes it authoritative) and the top-level value is reported and stored raw; a
field ``data`` lacks is taken from the top level, and the report says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Literal

from pydantic import BaseModel, Field

from nekoflow.errors import InputError

__all__ = ["CardData", "DepthPrompt", "FieldNote", "card_fields", "read_card"]

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


def _text(data: Mapping[str, Any], key: str, field: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool) and key.endswith("version"):
        return str(value)
    if not isinstance(value, str):
        raise InputError(f"{key} must be a string", field=field)
    return value


def _strings(data: Mapping[str, Any], key: str, field: str) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if isinstance(value, str):  # some exporters write one tag/greeting as a string
        return [value] if value.strip() else []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{key} must be a list of strings", field=field)
    return list(value)


def _depth_prompt(ext: Mapping[str, Any], ext_field: str) -> DepthPrompt | None:
    raw = ext.get("depth_prompt")
    field = f"{ext_field}.depth_prompt"
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


_KNOWN = frozenset({"name", "extensions", "character_book", *_TEXT_FIELDS, *_LIST_FIELDS})
_TWINS = {"creatorcomment": "creator_notes"}  # top-level V1 names of data fields
_FROM_TOP = "taken from the top level (data has none)"


@dataclass
class _Layout:
    """Where a card's fields are: V1 at the top level, V2/V3 in ``data``."""

    spec: str
    data: dict[str, Any]  # the fields read (V2/V3: data plus the top-level fields it lacks)
    paths: dict[str, str]  # the field name each key of ``data`` is reported under
    prefix: str = ""
    from_top: set[str] = dataclass_field(default_factory=set)
    top_notes: list[FieldNote] = dataclass_field(default_factory=list)
    top_other: dict[str, Any] = dataclass_field(default_factory=dict)

    def path(self, key: str) -> str:
        """The field name ``key`` is reported (and named in errors) under."""
        return self.paths.get(key) or _path(self.prefix, key)


def _layout(doc: Mapping[str, Any]) -> _Layout:
    spec = doc.get("spec")
    data = doc.get("data")
    if not isinstance(data, Mapping):
        if spec in V2_SPECS:
            got = type(data).__name__ if "data" in doc else "nothing"
            raise InputError(
                f"a {spec} card keeps its fields in data, which must be an object (got {got})",
                field="data",
            )
        return _Layout("chara_card_v1", dict(doc), {k: k for k in doc})
    layout = _Layout(
        spec if isinstance(spec, str) and spec else "chara_card_v2",
        dict(data),
        {k: f"data.{k}" for k in data},
        prefix="data",
    )
    merged = layout.data
    for key, value in doc.items():
        if key in ("spec", "spec_version", "data"):
            continue
        twin = _TWINS.get(key, key)
        if value is None and twin in merged:
            layout.top_notes.append(FieldNote(field=key, status="empty"))
        elif merged.get(twin) is not None:  # data has it: data is authoritative (V2 spec)
            where = layout.path(twin)
            if value == merged[twin]:
                note = f"duplicate of {where}"
            else:
                note = f"differs from {where}, which is used (data wins); stored raw"
                layout.top_other[f"top.{key}"] = value
            layout.top_notes.append(FieldNote(field=key, status="not used", note=note))
        elif twin in _KNOWN:  # a field data lacks: used from the top level
            merged[twin] = value
            layout.paths[twin] = key
            layout.from_top.add(key)
        else:
            layout.top_other[f"top.{key}"] = value
            layout.top_notes.append(FieldNote(field=key, status="not used", note="stored raw"))
    return layout


def card_fields(doc: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The card's spec and fields: V1 the top level, V2/V3 ``data`` plus top-level ones it lacks."""
    layout = _layout(doc)
    return layout.spec, layout.data


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
    layout = _layout(doc)
    data, path = layout.data, layout.path
    notes: list[FieldNote] = []
    name = _text(data, "name", path("name")).strip()
    if not name:
        raise InputError("the character card has no name", field=path("name"))
    if len(name) > 200:
        raise InputError("a character name has at most 200 characters", field=path("name"))
    notes.append(FieldNote(field=path("name"), status="mapped", note="the role's name"))
    values: dict[str, Any] = {k: _text(data, k, path(k)) for k in _TEXT_FIELDS}
    values.update({k: _strings(data, k, path(k)) for k in _LIST_FIELDS})
    comment = doc.get("creatorcomment")  # SillyTavern's V1 name of creator_notes
    if not layout.prefix and not values["creator_notes"] and isinstance(comment, str):
        values["creator_notes"] = comment
    ext_raw = data.get("extensions")
    if ext_raw is not None and not isinstance(ext_raw, Mapping):
        raise InputError("extensions must be an object", field=path("extensions"))
    ext = dict(ext_raw or {})
    depth = _depth_prompt(ext, path("extensions"))
    for key in (*_TEXT_FIELDS, *_LIST_FIELDS):
        field = path(key)
        if not values[key] or (isinstance(values[key], str) and not values[key].strip()):
            if key in data:
                notes.append(FieldNote(field=field, status="empty"))
            continue
        if key in _USED:
            notes.append(FieldNote(field=field, status="kept", note=_USED[key]))
        else:
            notes.append(FieldNote(field=field, status="not used", note=_STORED[key]))
    notes.extend(_extension_notes(ext, depth, path("extensions")))
    if _book(data, path("character_book")) is not None:
        notes.append(
            FieldNote(
                field=path("character_book"),
                status="mapped",
                note="world book bound to the character (entries reported below)",
            )
        )
    elif "character_book" in data:
        notes.append(FieldNote(field=path("character_book"), status="empty"))
    other: dict[str, Any] = {k: v for k, v in data.items() if k not in _KNOWN}
    for key in other:
        note = "client state, stored raw" if key in _V1_UI else "stored raw"
        notes.append(FieldNote(field=path(key), status="not used", note=note))
    for note in notes:
        if note.field.split(".")[0] in layout.from_top:
            note.note = f"{note.note}; {_FROM_TOP}" if note.note else _FROM_TOP
    notes.extend(layout.top_notes)
    for key, value in layout.top_other.items():
        other.setdefault(key, value)
    card = CardData(
        spec=layout.spec, name=name, depth_prompt=depth, extensions=ext, other=other, **values
    )
    return card, notes


def _extension_notes(
    ext: Mapping[str, Any], depth: DepthPrompt | None, ext_field: str
) -> list[FieldNote]:
    notes: list[FieldNote] = []
    for key, value in ext.items():
        field = f"{ext_field}.{key}"
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
