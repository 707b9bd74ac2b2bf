"""Card import keeps everything: every corpus card (V1/V2/V3, JSON/PNG) and the per-field report."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlmodel import Session, select

from nekoflow.characters import card_document, import_card_report, parse_card
from nekoflow.characters.card import CardData, read_card
from nekoflow.errors import InputError
from nekoflow.storage.dialogue import Role
from nekoflow.worldbook.importers import parse_import
from nekoflow.worldbook.png import minimal_png
from nekoflow.worldbook.store import WorldBookStore
from tests.corpus import corpus_file

CARDS = [
    "st_Aqua_v1.json",
    "st_Megumin_v1.png",
    "st_default_CodingSensei.png",
    "st_default_Seraphina.png",
    "lide_ai_v3.json",
]


def corpus(name: str) -> bytes:
    return corpus_file(name).read_bytes()


def _leaves(doc: Any, prefix: str = "") -> set[str]:
    """Every top-level field path of the card (data.* for V2/V3, extensions one level deeper)."""
    out: set[str] = set()
    for key, value in doc.items():
        path = f"{prefix}{key}"
        if key == "data" and isinstance(value, dict):
            out |= _leaves(value, "data.")
        elif key == "extensions" and isinstance(value, dict):
            out |= {f"{path}.{k}" for k in value}
        elif key not in ("spec", "spec_version"):
            out.add(path)
    return out


@pytest.mark.parametrize("name", CARDS)
def test_every_corpus_card_field_is_reported_and_kept(name: str) -> None:
    doc = card_document(corpus(name))
    parsed = parse_card(corpus(name))
    reported = {n.field for n in parsed.notes}
    assert _leaves(doc) <= reported, _leaves(doc) - reported  # nothing silently dropped
    stored = parsed.card.model_dump(mode="json")
    data = doc.get("data", doc)
    for key in ("description", "personality", "scenario", "first_mes", "mes_example"):
        assert stored[key] == (data.get(key) or "")
    for key, value in (data.get("extensions") or {}).items():
        assert stored["extensions"][key] == value  # extensions kept raw
    for key, value in data.items():  # unknown fields kept raw too
        if key not in CardData.model_fields and key not in ("character_book", "extensions"):
            assert stored["other"][key] == value
    assert CardData.model_validate(stored) == parsed.card  # round-trips through the JSON column


def test_spec_versions_and_png_chunks() -> None:
    assert parse_card(corpus("st_Aqua_v1.json")).card.spec == "chara_card_v1"
    assert parse_card(corpus("st_Megumin_v1.png")).card.spec == "chara_card_v1"
    assert parse_card(corpus("st_default_Seraphina.png")).card.spec == "chara_card_v2"
    v3 = parse_card(corpus("lide_ai_v3.json"))
    assert v3.card.spec == "chara_card_v3" and v3.book is not None and len(v3.book.entries) == 27
    assert v3.card.extensions["regex_scripts"][0]["scriptName"] == "对AI隐藏状态栏"
    # a PNG with both chunks: the V3 ccv3 chunk wins over the V2 chara chunk
    v2 = {"spec": "chara_card_v2", "data": {"name": "旧", "description": "v2"}}
    v3doc = {
        "spec": "chara_card_v3",
        "data": {"name": "新", "description": "v3", "nickname": "小新"},
    }
    png = minimal_png(
        {
            "chara": base64.b64encode(json.dumps(v2).encode()).decode(),
            "ccv3": base64.b64encode(json.dumps(v3doc, ensure_ascii=False).encode()).decode(),
        }
    )
    card = parse_card(png).card
    assert (card.spec, card.name, card.nickname) == ("chara_card_v3", "新", "小新")


FULL = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "风堇",
        "description": "{{char}}是温柔的治疗师",
        "personality": "细心",
        "scenario": "白塔之下",
        "first_mes": "你来啦,{{user}}",
        "alternate_greetings": ["又见面了", "欢迎回来"],
        "mes_example": "<START>\n{{user}}: 你好\n{{char}}: 你好呀",
        "system_prompt": "你在扮演{{char}}。{{original}}",
        "post_history_instructions": "保持角色。{{original}}",
        "creator_notes": "给人看的",
        "tags": ["治疗", "温柔"],
        "creator": "作者",
        "character_version": "1.2",
        "extensions": {
            "depth_prompt": {"prompt": "{{char}}很在意{{user}}", "depth": 2, "role": "user"},
            "talkativeness": "0.5",
            "custom_tool": {"x": 1},
        },
        "mystery_field": 42,
    },
}


def test_every_v2_field_kept_with_its_status() -> None:
    card, notes = read_card(FULL)
    status = {n.field: n.status for n in notes}
    for key in (
        "description",
        "personality",
        "scenario",
        "first_mes",
        "alternate_greetings",
        "mes_example",
        "system_prompt",
        "post_history_instructions",
        "extensions.depth_prompt",
    ):
        assert status[f"data.{key}"] == "kept", key
    for key in ("creator_notes", "tags", "creator", "character_version", "mystery_field"):
        assert status[f"data.{key}"] == "not used", key
    assert status["data.extensions.custom_tool"] == "not used"
    assert card.depth_prompt is not None and (card.depth_prompt.depth, card.depth_prompt.role) == (
        2,
        "user",
    )
    assert card.greetings() == ["你来啦,{{user}}", "又见面了", "欢迎回来"]
    assert card.other == {"mystery_field": 42}
    assert card.extensions["custom_tool"] == {"x": 1}


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"alternate_greetings": [1, 2]}, "data.alternate_greetings"),
        ({"mes_example": {"x": 1}}, "data.mes_example"),
        ({"extensions": {"depth_prompt": {"prompt": "x", "depth": "deep"}}}, "depth.depth"),
        ({"extensions": {"depth_prompt": {"prompt": "x", "role": "narrator"}}}, "depth.role"),
        ({"extensions": {"depth_prompt": "x"}}, "data.extensions.depth_prompt"),
        ({"extensions": []}, "data.extensions"),
        ({"name": "长" * 201}, "data.name"),
    ],
)
def test_bad_fields_are_named(patch: dict, field: str) -> None:
    doc = {**FULL, "data": {**FULL["data"], **patch}}
    with pytest.raises(InputError) as err:
        read_card(doc)
    expected = field.replace("depth.", "data.extensions.depth_prompt.")
    assert err.value.field == expected


def _lide(change: Any) -> bytes:
    """The corpus V3 card (27-entry character_book) with one change made to its JSON."""
    doc = json.loads(corpus("lide_ai_v3.json"))
    change(doc)
    return json.dumps(doc, ensure_ascii=False).encode()


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda d: d["data"].update(character_book=[]), "data.character_book", "got list"),
        (lambda d: d["data"].update(character_book="爱"), "data.character_book", "got str"),
        (lambda d: d["data"].update(character_book=3), "data.character_book", "got int"),
        (lambda d: d.update(data=[]), "data", r"chara_card_v3 card .* \(got list\)"),
        (lambda d: d.update(data="{}"), "data", r"must be an object \(got str\)"),
        (lambda d: d.pop("data"), "data", r"must be an object \(got nothing\)"),
    ],
)
def test_a_wrongly_typed_book_or_data_is_named_and_nothing_written(
    engine, change: Any, field: str, message: str
) -> None:
    raw = _lide(change)
    for read in (parse_card, parse_import):  # character import and worldbook import alike
        with pytest.raises(InputError, match=message) as err:
            read(raw)
        assert err.value.field == field
    with pytest.raises(InputError):
        import_card_report(engine, raw)
    assert _stored(engine) == ([], [])


def test_a_null_book_is_no_book() -> None:
    parsed = parse_card(_lide(lambda d: d["data"].update(character_book=None)))
    assert parsed.book is None and parsed.card.name == "爱"
    assert {n.field: n.status for n in parsed.notes}["data.character_book"] == "empty"


# --- V2/V3 top-level fields: used when data lacks them, duplicates when equal, else reported --


def _notes(parsed: Any) -> dict[str, str]:
    return {n.field: f"{n.status}: {n.note}" for n in parsed.notes}


TOP_BOOK = {"entries": [{"keys": ["白塔"], "content": "白塔是分别的地方", "id": 1}]}


def _top_only(**top: Any) -> bytes:
    """A V2 card whose data has only name and description; ``top`` at the top level."""
    doc = {"spec": "chara_card_v2", "data": {"name": "猫", "description": "d"}, **top}
    return json.dumps(doc, ensure_ascii=False).encode()


def test_top_level_fields_data_lacks_are_used(engine) -> None:
    raw = _top_only(
        system_prompt="只在顶层的系统提示",
        alternate_greetings=["顶层问候"],
        creatorcomment="给人看的",
        character_book=TOP_BOOK,
    )
    parsed = parse_card(raw)
    card = parsed.card
    assert card.system_prompt == "只在顶层的系统提示" and card.alternate_greetings == ["顶层问候"]
    assert card.creator_notes == "给人看的" and card.other == {}
    assert parsed.profile.startswith("只在顶层的系统提示")
    assert parsed.book is not None and [e.content for e in parsed.book.entries] == [
        "白塔是分别的地方"
    ]
    notes = _notes(parsed)
    for field in ("system_prompt", "alternate_greetings", "creatorcomment", "character_book"):
        assert notes[field].endswith("taken from the top level (data has none)"), field
        assert f"data.{field}" not in notes
    assert notes["system_prompt"].startswith("kept:")
    assert notes["character_book"].startswith("mapped:")
    # stored and bound; an update replaces the same book, the top-level book read again
    first = import_card_report(engine, raw)
    assert first.book is not None and first.role.card["book_id"] == first.book.id
    assert first.role.card["system_prompt"] == "只在顶层的系统提示"
    book2 = {"entries": [{"keys": ["月"], "content": "月亮", "id": 1}]}
    second = import_card_report(engine, _top_only(character_book=book2), update=True)
    assert second.book is not None and second.book.id == first.book.id
    stored = WorldBookStore(engine).get(first.book.id)
    assert [e.content for e in stored.entries] == ["月亮"]
    # the worldbook import of the card finds the same book
    [book] = parse_import(raw).books
    assert [e.content for e in book.entries] == ["白塔是分别的地方"] and book.character_ids == [
        "猫"
    ]


@pytest.mark.parametrize(
    ("top", "field", "message"),
    [
        ({"system_prompt": 5}, "system_prompt", "must be a string"),
        ({"alternate_greetings": [1]}, "alternate_greetings", "list of strings"),
        ({"character_book": []}, "character_book", "must be an object"),
        ({"extensions": {"depth_prompt": "x"}}, "extensions.depth_prompt", "depth_prompt"),
    ],
)
def test_a_bad_top_level_field_data_lacks_is_named(top: dict, field: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as err:
        parse_card(_top_only(**top))
    assert err.value.field == field


def test_top_level_duplicates_are_silent_and_differences_reported() -> None:
    doc = json.loads(corpus("lide_ai_v3.json"))
    same = parse_card(corpus("lide_ai_v3.json"))
    notes = _notes(same)
    for field in ("name", "description", "first_mes", "mes_example", "tags"):
        assert notes[field] == f"not used: duplicate of data.{field}", field
    assert notes["creatorcomment"] == "not used: duplicate of data.creator_notes"
    assert not any(k.startswith("top.") and k[4:] in doc["data"] for k in same.card.other)
    # a top-level copy that differs: data wins, the other value is reported and kept raw
    changed = {**doc, "description": "旧的描述", "name": "旧名", "creatorcomment": "旧注"}
    parsed = parse_card(json.dumps(changed, ensure_ascii=False).encode())
    assert (parsed.card.name, parsed.card.description) == ("爱", doc["data"]["description"])
    assert parsed.card.creator_notes == doc["data"]["creator_notes"]
    notes = _notes(parsed)
    for key, twin in (("description", "description"), ("name", "name")):
        assert notes[key].startswith(f"not used: differs from data.{twin}, which is used"), key
    assert notes["creatorcomment"].startswith("not used: differs from data.creator_notes")
    assert parsed.card.other["top.description"] == "旧的描述"
    assert parsed.card.other["top.name"] == "旧名"
    assert parsed.card.other["top.creatorcomment"] == "旧注"


def test_import_stores_the_card_and_update_replaces_it(engine) -> None:
    raw = json.dumps(FULL, ensure_ascii=False).encode()
    first = import_card_report(engine, raw)
    assert not first.updated and first.book is None
    with Session(engine) as s:
        role = s.get(Role, first.role.id)
        assert role.card["post_history_instructions"] == "保持角色。{{original}}"
        assert role.card["depth_prompt"] == {
            "prompt": "{{char}}很在意{{user}}",
            "depth": 2,
            "role": "user",
        }
        assert "开场白" not in role.profile_prompt  # the greeting is a line, not profile text
    with pytest.raises(InputError) as err:
        import_card_report(engine, raw)
    assert err.value.field == "name" and "--update" in str(err.value)

    # update with a book: same role id, new card; a second update replaces that same book
    book = {"entries": [{"keys": ["白塔"], "content": "白塔是分别的地方", "id": 1}]}
    v2 = {**FULL, "data": {**FULL["data"], "personality": "更细心", "character_book": book}}
    second = import_card_report(engine, json.dumps(v2, ensure_ascii=False).encode(), update=True)
    assert second.updated and second.role.id == first.role.id and second.book is not None
    book2 = {
        "entries": [
            {"keys": ["月"], "content": "月亮", "id": 1},
            {"keys": ["星"], "content": "星", "id": 2},
        ]
    }
    v3 = {**FULL, "data": {**FULL["data"], "character_book": book2}}
    third = import_card_report(engine, json.dumps(v3, ensure_ascii=False).encode(), update=True)
    assert third.book is not None and third.book.id == second.book.id
    store = WorldBookStore(engine)
    assert [e.content for e in store.get(second.book.id).entries] == ["月亮", "星"]
    assert len(store.list_all()) == 1
    # an update without a book removes the previous card's book
    fourth = import_card_report(engine, raw, update=True)
    assert fourth.removed_book == second.book.id and store.list_all() == []
    with Session(engine) as s:
        assert s.get(Role, first.role.id).card["personality"] == "细心"


# --- all or nothing: a failure while writing leaves no half-written character or book ----


def _locked(*_args: Any, **_kwargs: Any) -> Any:
    raise RuntimeError("database is locked")


def _stored(engine) -> tuple[list[tuple[str, Any, str]], list[dict[str, Any]]]:
    """Every role (name, card, profile) and every book as stored."""
    with Session(engine) as s:
        roles = [(r.name, r.card, r.profile_prompt) for r in s.exec(select(Role).order_by(Role.id))]
    return roles, [b.model_dump() for b in WorldBookStore(engine).list_all()]


def _seraphina_v2(**changes: Any) -> bytes:
    """Seraphina's corpus card (V2 PNG with a character_book) as JSON, ``data`` changed."""
    doc = dict(card_document(corpus("st_default_Seraphina.png")))
    return json.dumps({**doc, "data": {**doc["data"], **changes}}, ensure_ascii=False).encode()


@pytest.mark.parametrize("fail", ["book", "role"])
def test_a_failing_import_writes_nothing(
    engine, monkeypatch: pytest.MonkeyPatch, fail: str
) -> None:
    raw = corpus("st_default_Seraphina.png")
    if fail == "book":  # the book store fails (the role would come first)
        monkeypatch.setattr(WorldBookStore, "import_books", _locked)
    else:  # the role fails after its book was written
        monkeypatch.setattr(Role, "new", _locked)
    with pytest.raises(RuntimeError, match="database is locked"):
        import_card_report(engine, raw)
    assert _stored(engine) == ([], [])
    monkeypatch.undo()
    result = import_card_report(engine, raw)  # not refused as "exists already"
    assert result.book is not None and result.role.card["book_id"] == result.book.id


@pytest.mark.parametrize("fail", ["book", "delete"])
def test_a_failing_update_keeps_the_previous_card_and_book(
    engine, monkeypatch: pytest.MonkeyPatch, fail: str
) -> None:
    first = import_card_report(engine, corpus("st_default_Seraphina.png"))
    assert first.book is not None
    before = _stored(engine)
    if fail == "book":  # replacing the book fails
        monkeypatch.setattr(WorldBookStore, "import_books", _locked)
        raw = _seraphina_v2(personality="冷淡", character_book={"entries": [{"keys": ["x"]}]})
    else:  # a card without a book: removing the previous book fails
        monkeypatch.setattr(WorldBookStore, "delete", _locked)
        raw = _seraphina_v2(personality="冷淡", character_book=None)
    with pytest.raises(RuntimeError, match="database is locked"):
        import_card_report(engine, raw, update=True)
    assert _stored(engine) == before
    monkeypatch.undo()
    again = import_card_report(engine, raw, update=True)
    assert again.role.id == first.role.id and again.role.card["personality"] == "冷淡"


@pytest.mark.parametrize("name", CARDS)
def test_every_corpus_card_imports(engine, name: str) -> None:
    result = import_card_report(engine, corpus(name))
    with Session(engine) as s:
        role = s.get(Role, result.role.id)
        assert role.card is not None and role.card["name"] == result.role.name
        if result.book is not None:
            assert role.card["book_id"] == result.book.id
            assert WorldBookStore(engine).get(result.book.id) is not None


# --- fuzz: any JSON is a card or an InputError naming a field, never another exception ----


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_fields = st.sampled_from(
    [
        "name",
        "description",
        "first_mes",
        "alternate_greetings",
        "mes_example",
        "tags",
        "extensions",
        "character_book",
        "system_prompt",
        "creator_notes",
        "character_version",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(_fields, _json, max_size=6),
    st.booleans(),
    st.dictionaries(_fields, _json, max_size=3),
)
def test_any_json_card_is_read_or_rejected_with_a_field(
    data: dict, wrapped: bool, top: dict
) -> None:
    data = {"name": "猫", **data} if "name" not in data else data
    doc = {**top, "spec": "chara_card_v2", "data": data} if wrapped else data
    raw = json.dumps(doc, ensure_ascii=False).encode()
    try:
        parsed = parse_card(raw)
    except InputError as exc:
        assert exc.field
        return
    assert parsed.card.name == str(data["name"]).strip()
    assert CardData.model_validate(parsed.card.model_dump(mode="json")) == parsed.card
