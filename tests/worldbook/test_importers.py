"""Imports: world_books.json, SillyTavern World Info, V2/V3 character cards (JSON and PNG)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from nekoflow.errors import InputError
from nekoflow.worldbook import WorldBookRecallConfig, WorldBookRecallContext, match_entries_v2
from nekoflow.worldbook.errors import WorldBookDataError
from nekoflow.worldbook.formats import dump_world_books
from nekoflow.worldbook.importers import parse_import
from nekoflow.worldbook.png import chunk, minimal_png, read_text_chunks
from nekoflow.worldbook.st_export import export_book
from nekoflow.worldbook.store import WorldBookStore


def st_entry(uid: int, **kw: Any) -> dict[str, Any]:
    base = {
        "uid": uid,
        "key": [],
        "keysecondary": [],
        "comment": f"entry {uid}",
        "content": f"content {uid}",
        "constant": False,
        "vectorized": False,
        "selective": True,
        "selectiveLogic": 0,
        "addMemo": True,
        "order": 100,
        "position": 0,
        "disable": False,
        "excludeRecursion": False,
        "preventRecursion": False,
        "delayUntilRecursion": False,
        "probability": 100,
        "useProbability": True,
        "depth": 4,
        "group": "",
        "groupOverride": False,
        "groupWeight": 100,
        "scanDepth": None,
        "caseSensitive": None,
        "matchWholeWords": None,
        "useGroupScoring": None,
        "automationId": "",
        "role": None,
        "sticky": 0,
        "cooldown": 0,
        "delay": 0,
        "displayIndex": uid,
    }
    base.update(kw)
    return base


def world_info() -> dict[str, Any]:
    return {
        "entries": {
            "0": st_entry(0, key=["Dragon", "龙"], order=50, caseSensitive=True),
            "1": st_entry(1, constant=True, comment="Rules"),
            "2": st_entry(2, key=["sword"], keysecondary=["magic"], selectiveLogic=0),
            "3": st_entry(3, key=["alpha", "beta"], keysecondary=["c"], selectiveLogic=3),
            "4": st_entry(4, key=["x"], keysecondary=["y", "z"], selectiveLogic=3),
            "5": st_entry(5, key=["p"], keysecondary=["q"], selectiveLogic=2),
            "6": st_entry(6, key=["off"], disable=True, cooldown=3),
            "7": st_entry(7, key=["/regex/i"], probability=50, position=1),
            "8": st_entry(8, key=["wolf"], keysecondary=["v"], selective=False),
        }
    }


def test_sillytavern_world_info_mapping() -> None:
    report = parse_import(json.dumps(world_info()).encode(), fallback_name="lore")
    assert report.source_format == "sillytavern_world_info"
    [book] = report.books
    assert book.name == "lore" and book.character_ids == []
    e = {x.name: x for x in book.entries}
    assert [x.name for x in book.entries] == [f"entry {i}" if i != 1 else "Rules" for i in range(9)]
    dragon = e["entry 0"]
    assert (dragon.keywords, dragon.priority, dragon.case_sensitive) == (["Dragon", "龙"], 50, True)
    assert dragon.trigger_sources == ["user", "history"] and dragon.id.endswith("-0")
    assert e["Rules"].always_on is True

    def sec(name: str) -> tuple[list[str], list[str], str]:
        x = e[name]
        return x.keywords, x.rules.secondary_keywords, x.rules.selective_logic

    # Secondary keys keep SillyTavern's meaning (issue 17: no longer merged into match_mode).
    assert sec("entry 2") == (["sword"], ["magic"], "and_any")
    assert sec("entry 3") == (["alpha", "beta"], ["c"], "and_all")
    assert sec("entry 4") == (["x"], ["y", "z"], "and_all")
    assert sec("entry 5") == (["p"], ["q"], "not_any")
    assert sec("entry 8") == (["wolf"], [], "and_any")  # selective off: ignored, as in ST
    assert (e["entry 6"].enabled, e["entry 6"].cooldown_turns) == (False, 3)
    seven = e["entry 7"].rules
    assert (seven.regex_keys, seven.probability, seven.position) == (True, 50, "after_char")
    assert book.rules.recursive_scanning is True  # SillyTavern's default when the file is silent
    text = "\n".join(report.warnings)
    assert "selective=false are ignored" in text and "entry '8'" in text
    assert "entry '0'" not in text  # fully mapped


def test_bad_world_info_is_rejected_whole_naming_each_entry(engine: Engine) -> None:
    doc = world_info()
    doc["entries"]["2"]["key"] = "sword, shield"  # comma string is accepted
    doc["entries"]["3"]["key"] = 7
    doc["entries"]["5"]["order"] = "high"
    doc["entries"]["6"] = "junk"
    with pytest.raises(WorldBookDataError) as err:
        parse_import(json.dumps(doc).encode())
    problems = err.value.problems
    assert len(problems) == 3
    assert "entry '3' (entry 3): key must be a list of strings" in problems[0]
    assert "entry '5' (entry 5): order must be an integer" in problems[1]
    assert "entry '6'" in problems[2]
    assert WorldBookStore(engine).list_all() == []


def test_key_strings_are_split_outside_regex_keys_and_reported() -> None:
    """A comma-separated key string is split as SillyTavern's key box splits it: a regex key
    written ``/pattern/flags`` keeps its commas. The report says what was done."""
    doc = {
        "entries": {
            "0": st_entry(0, key="/dragons{1,2}/i, wyrm"),
            "1": st_entry(1, key="/a(b,c)/", keysecondary="秘密,宝藏"),
            "2": st_entry(2, key="/help, /start"),
            "3": st_entry(3, key="龙"),
        }
    }
    report = parse_import(json.dumps(doc).encode())
    zero, one, two, three = report.books[0].entries
    assert zero.keywords == ["/dragons{1,2}/i", "wyrm"]
    assert (one.keywords, one.rules.secondary_keywords) == (["/a(b,c)/"], ["秘密", "宝藏"])
    assert two.keywords == ["/help", "/start"]  # never a /pattern/flags: split at its commas
    assert three.keywords == ["龙"]
    text = "\n".join(report.warnings)
    assert (
        "key is a string, not a list: read as the keys ['/dragons{1,2}/i', 'wyrm']" in text
        and "entry '0'" in text
    )
    assert "keysecondary is a string, not a list: read as the keys ['秘密', '宝藏']" in text
    assert "entry '3'" not in text  # one key, nothing split
    ctx = WorldBookRecallContext(latest_user_message="two DRAGONS", turn_id="t")
    assert [r.entry.id for r in match_entries_v2(ctx, report.books)] == [zero.id]
    # The auditor's key: the regex stays one key; that it does not compile is reported.
    [bad] = (
        parse_import(
            json.dumps({"entries": {"0": st_entry(0, key="/dragons?{1,2}/i, wyrm")}}).encode()
        )
        .books[0]
        .entries
    )
    assert bad.keywords == ["/dragons?{1,2}/i", "wyrm"]


def card(spec: str = "chara_card_v2") -> dict[str, Any]:
    return {
        "spec": spec,
        "spec_version": "2.0" if spec.endswith("v2") else "3.0",
        "data": {
            "name": "风堇",
            "description": "…",
            "first_mes": "你好",
            "character_book": {
                "name": "风堇的书",
                "scan_depth": 5,
                "token_budget": 500,
                "entries": [
                    {
                        "keys": ["白塔"],
                        "content": "白塔是分别的地方",
                        "extensions": {"position": 0, "probability": 100, "sticky": 2},
                        "enabled": True,
                        "insertion_order": 10,
                        "case_sensitive": False,
                        "name": "白塔",
                        "priority": 40,
                        "id": 1,
                        "comment": "",
                        "selective": True,
                        "secondary_keys": ["誓约"],
                        "constant": False,
                        "position": "before_char",
                    },
                    {
                        "keys": [],
                        "content": "规则",
                        "extensions": {},
                        "enabled": False,
                        "insertion_order": 5,
                        "constant": True,
                        "id": 2,
                        "comment": "规则",
                        "use_regex": True,
                    },
                ],
            },
        },
    }


@pytest.mark.parametrize("spec", ["chara_card_v2", "chara_card_v3"])
def test_character_card_json(spec: str) -> None:
    report = parse_import(json.dumps(card(spec), ensure_ascii=False).encode())
    assert report.source_format == spec.replace("chara_", "character_")
    [book] = report.books
    assert (book.name, book.character_ids) == ("风堇的书", ["风堇"])
    tower, rule = book.entries
    assert (tower.name, tower.keywords, tower.rules.secondary_keywords, tower.priority) == (
        "白塔",
        ["白塔"],
        ["誓约"],
        10,  # SillyTavern orders card entries by insertion_order, not by priority
    )
    assert (tower.rules.sticky, tower.rules.position) == (2, "before_char")
    assert (rule.name, rule.always_on, rule.enabled, rule.priority) == ("规则", True, False, 5)
    assert (book.rules.scan_depth, book.rules.token_budget) == (5, 500)
    text = "\n".join(report.warnings)
    assert "priority=40 differs from insertion_order=10: order used" in text
    assert "sticky" not in text and "use_regex" not in text and "scan_depth" not in text


def _chunk_payloads() -> tuple[str, str]:
    """The base64 tEXt payloads of the V2 card and of a V3 card whose book is "v3 book"."""
    v3 = card("chara_card_v3")
    v3["data"]["character_book"]["name"] = "v3 book"
    v2_payload, v3_payload = (
        base64.b64encode(json.dumps(c).encode()).decode("ascii") for c in (card(), v3)
    )
    return v2_payload, v3_payload


def test_png_card_v2_and_v3_chunks() -> None:
    payload, v3_payload = _chunk_payloads()
    report = parse_import(minimal_png({"chara": payload}))
    assert report.books[0].entries[0].keywords == ["白塔"]
    for kind in (b"tEXt", b"zTXt", b"iTXt"):
        png = minimal_png({"chara": payload, "ccv3": v3_payload}, kind=kind)
        assert read_text_chunks(png)["ccv3"] == v3_payload
        report = parse_import(png)
        assert (report.source_format, report.books[0].name) == ("character_card_v3", "v3 book")


def test_missing_card_fields_get_sillytavern_card_defaults() -> None:
    """convertCharacterBook: ``selective: entry.selective || false``, position after the
    character unless ``"before_char"``, ``disable: !entry.enabled`` — not World Info's defaults."""
    bare = {"keys": ["dragon"], "secondary_keys": ["fire"], "content": "龙", "extensions": {}}
    doc = {
        "spec": "chara_card_v2",
        "data": {
            "name": "X",
            "character_book": {
                "entries": [
                    {**bare, "id": 1, "enabled": True},
                    {**bare, "id": 2},  # no enabled
                    {
                        **bare,
                        "id": 3,
                        "enabled": True,
                        "selective": True,
                        "position": "before_char",
                    },
                    {**bare, "id": 4, "disable": False},  # a World Info name only
                ]
            },
        },
    }
    report = parse_import(json.dumps(doc).encode())
    [book] = report.books
    one, two, three, four = book.entries
    assert (one.enabled, one.rules.secondary_keywords, one.rules.position) == (
        True,
        [],
        "after_char",
    )
    assert two.enabled is False and four.enabled is True
    assert (three.rules.secondary_keywords, three.rules.position) == (["fire"], "before_char")
    text = "\n".join(report.warnings)
    assert "secondary keys are ignored: selective is not set" in text and "entry '1'" in text
    assert "enabled is not set: disabled, as SillyTavern reads a card entry — entry '2'" in text
    assert "enabled is not set: disable=False used" in text and "entry '4'" in text
    ctx = WorldBookRecallContext(latest_user_message="a dragon", turn_id="t")
    assert [r.entry.id for r in match_entries_v2(ctx, [book])] == [one.id, four.id]
    assert export_book(book) == doc["data"]["character_book"]  # defaults are not written back


def test_unknown_card_position_is_after_the_character() -> None:
    """convertCharacterBook: ``extensions.position ?? (position === 'before_char' ? before :
    after)`` — any other top-level string is after the character; extensions.position wins."""
    bare = {"keys": ["dragon"], "content": "龙", "enabled": True}
    doc = {
        "spec": "chara_card_v2",
        "data": {
            "name": "X",
            "character_book": {
                "entries": [
                    {**bare, "id": 1, "position": "after_macro", "extensions": {}},
                    {**bare, "id": 2, "position": "", "extensions": {}},
                    {**bare, "id": 3, "position": "top", "extensions": {"position": 0}},
                    {**bare, "id": 4, "position": "top", "extensions": {"position": 4}},
                ]
            },
        },
    }
    report = parse_import(json.dumps(doc).encode())
    [book] = report.books
    assert [e.rules.position for e in book.entries] == [
        "after_char",
        "after_char",
        "before_char",
        "at_depth",
    ]
    text = "\n".join(report.warnings)
    assert "position='after_macro' is not before_char or after_char: after_char used" in text
    assert "position='' is not before_char or after_char: after_char used" in text
    assert "entry '1'" in text and "entry '2'" in text
    assert "position='top' disagrees with extensions.position=0: extensions.position used" in text
    assert "position='top' is not" not in text  # extensions.position decides: nothing to guess
    assert export_book(book) == doc["data"]["character_book"]  # the original JSON back


def test_unknown_position_string_still_rejects_world_info_and_extensions() -> None:
    world_info = {"entries": {"0": st_entry(0, key=["a"], position="after_macro")}}
    with pytest.raises(WorldBookDataError) as err:
        parse_import(json.dumps(world_info).encode())
    assert any(
        "position must be before_char or after_char, got 'after_macro'" in p
        for p in err.value.problems
    ), err.value.problems
    card_doc = {
        "spec": "chara_card_v2",
        "data": {
            "name": "X",
            "character_book": {
                "entries": [{"keys": ["a"], "content": "c", "extensions": {"position": "top"}}]
            },
        },
    }
    with pytest.raises(WorldBookDataError) as err:
        parse_import(json.dumps(card_doc).encode())
    assert any("extensions.position must be" in p for p in err.value.problems)


def test_missing_world_info_fields_keep_world_info_defaults() -> None:
    doc = {
        "entries": {"0": {"uid": 0, "key": ["dragon"], "keysecondary": ["fire"], "content": "x"}}
    }
    [entry] = parse_import(json.dumps(doc).encode()).books[0].entries
    assert (entry.enabled, entry.rules.secondary_keywords, entry.rules.position) == (
        True,
        ["fire"],
        "before_char",
    )


def test_png_chunk_keywords_are_matched_in_any_case() -> None:
    """SillyTavern lower-cases a tEXt keyword before looking for ``chara`` / ``ccv3``."""
    payload, v3_payload = _chunk_payloads()
    report = parse_import(minimal_png({"Chara": payload}))
    assert report.books[0].entries[0].keywords == ["白塔"]
    report = parse_import(minimal_png({"CHARA": payload, "CCv3": v3_payload}))
    assert (report.source_format, report.books[0].name) == ("character_card_v3", "v3 book")


def test_bad_png_inputs() -> None:
    with pytest.raises(InputError, match="no 'chara' or 'ccv3'") as err:
        parse_import(minimal_png({"Comment": "hello"}))
    assert err.value.field == "png"
    good = minimal_png({"chara": "e30="})
    corrupted = good[:40] + bytes([good[40] ^ 0xFF]) + good[41:]
    with pytest.raises(InputError, match="CRC mismatch"):
        parse_import(corrupted)
    with pytest.raises(InputError, match="truncated"):
        parse_import(good[:30])
    with pytest.raises(InputError, match="not base64-encoded JSON"):
        parse_import(minimal_png({"chara": "!!!notbase64"}))
    with pytest.raises(WorldBookDataError, match="no character_book"):
        parse_import(minimal_png({"chara": "e30="}))  # {} has no book
    assert chunk(b"IEND", b"")[4:8] == b"IEND"


def test_unknown_and_malformed_files() -> None:
    with pytest.raises(InputError, match="not valid JSON"):
        parse_import(b"{nope")
    with pytest.raises(InputError, match="unknown file format"):
        parse_import(b'{"hello": 1}')
    with pytest.raises(InputError, match="duplicate key"):
        parse_import(b'{"world_books": {"a": {}, "a": {}}}')
    with pytest.raises(WorldBookDataError) as err:
        parse_import(
            json.dumps(
                {
                    "world_books": {
                        "b": {
                            "entries": {
                                "e1": {"name": "one", "match_mode": "most"},
                                "e2": {"id": "other"},
                                "e3": {"trigger_sources": ["x"]},
                            }
                        }
                    }
                }
            ).encode()
        )
    assert [p.split(":")[0] for p in err.value.problems] == [
        "book 'b' entry 'e1' (one)",
        "book 'b' entry 'e2'",
        "book 'b' entry 'e3'",
    ]


def test_imported_world_info_matches_and_exports(engine: Engine) -> None:
    store = WorldBookStore(engine)
    report = parse_import(json.dumps(world_info()).encode(), name="WI")
    store.import_books(report.books)
    ctx = WorldBookRecallContext(latest_user_message="the Dragon and the sword of magic")
    got = [r.entry.name for r in match_entries_v2(ctx, store.list_all())]
    assert got == ["Rules", "entry 2", "entry 0"]
    exported = dump_world_books(store.list_all())
    again = parse_import(json.dumps(exported).encode())
    assert again.books == store.list_all()


def test_seed_app_exports_and_api_answers_import() -> None:
    # the seed app's per-book export: one book, entries in the seed's field names, "_" markers
    single = {
        "name": "翁法罗斯",
        "character_ids": ["风堇"],
        "enabled": False,
        "entries": [{"name": "白塔旧誓", "keywords": ["白塔"], "content": "c", "priority": 80}],
        "_export_version": 1,
        "_exported_at": "2025-01-01T00:00:00",
    }
    report = parse_import(json.dumps(single).encode())
    assert report.source_format == "world_books.json"
    (book,) = report.books
    assert (book.name, book.character_ids, book.enabled) == ("翁法罗斯", ["风堇"], False)
    assert book.id and book.entries[0].id  # fresh ids where the file has none
    assert (book.entries[0].keywords, book.entries[0].priority) == (["白塔"], 80)
    named = parse_import(json.dumps(single).encode(), name="改名", book_id="given").books[0]
    assert (named.id, named.name) == ("given", "改名")
    # the "export all" bundle (a list of books) with a book as GET /api/world-books returns it
    bundle = {
        "_export_version": 1,
        "_type": "world_books_bundle",
        "world_books": [{**single, "id": "b1", "entry_count": 1}],
    }
    (b1,) = parse_import(json.dumps(bundle).encode()).books
    assert (b1.id, [e.name for e in b1.entries]) == ("b1", ["白塔旧誓"])
    # SillyTavern World Info (entries with "key") is still told apart
    wi = {"entries": {"0": {"uid": 0, "key": ["白塔"], "content": "c", "comment": "x"}}}
    assert parse_import(json.dumps(wi).encode()).source_format == "sillytavern_world_info"


def test_every_field_is_mapped_kept_or_reported() -> None:
    doc = {
        "entries": {
            "0": st_entry(
                0,
                key=["/dragons?/i", "wyrm"],
                keysecondary=["egg"],
                selectiveLogic=2,
                position=4,
                depth=2,
                role=2,
                sticky=2,
                delay=1,
                group="beasts, fire",
                groupOverride=True,
                groupWeight=30,
                useGroupScoring=True,
                scanDepth=3,
                matchWholeWords=True,
                excludeRecursion=True,
                delayUntilRecursion=2,
                ignoreBudget=True,
                vectorized=True,
                matchPersonaDescription=True,
                characterFilter={"isExclude": False, "names": ["Seraphina"], "tags": []},
                brandNewField="x",
                extensions={"somePlugin": {"on": True}},
            )
        }
    }
    report = parse_import(json.dumps(doc).encode())
    entry = report.books[0].entries[0]
    r = entry.rules
    assert (r.secondary_keywords, r.selective_logic, r.regex_keys) == (["egg"], "not_any", True)
    assert (r.position, r.depth, r.role, r.sticky, r.delay) == ("at_depth", 2, "assistant", 2, 1)
    assert (r.groups(), r.group_override, r.group_weight, r.group_scoring) == (
        ["beasts", "fire"],
        True,
        30,
        True,
    )
    assert (r.scan_depth, r.match_whole_words, r.exclude_recursion) == (3, True, True)
    assert (r.delay_until_recursion, r.ignore_budget) == (2, True)
    text = "\n".join(report.warnings)
    for reported in (
        "vectorized=True is kept for export but not applied",
        "matchPersonaDescription=True is kept for export but not applied",
        "characterFilter=",
        "unknown field brandNewField='x'",
        "unknown field extensions.somePlugin",
    ):
        assert reported in text and "entry '0'" in text
    assert r.source["brandNewField"] == "x"  # kept for export


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("probability", 150, "probability must be between 0 and 100"),
        ("selectiveLogic", 7, "selectiveLogic must be between 0 and 3"),
        ("position", 9, "position must be between 0 and 7"),
        ("sticky", "long", "sticky must be an integer"),
        ("matchWholeWords", "yes", "matchWholeWords must be true or false"),
    ],
)
def test_bad_sillytavern_values_are_rejected_naming_the_field(
    field: str, value: Any, message: str
) -> None:
    doc = {"entries": {"0": st_entry(0, key=["a"], **{field: value})}}
    with pytest.raises(WorldBookDataError) as err:
        parse_import(json.dumps(doc).encode())
    assert any(message in p and "entry '0'" in p for p in err.value.problems), err.value.problems


def test_world_info_entries_have_their_decorators_cut_too() -> None:
    """SillyTavern cuts the leading ``@@`` lines of every entry, World Info ones included."""
    doc = {"entries": {"0": st_entry(0, key=["龙"], content="@@dont_activate\n龙", comment="c")}}
    report = parse_import(json.dumps(doc, ensure_ascii=False).encode())
    [entry] = report.books[0].entries
    assert (entry.content, entry.enabled) == ("龙", False)
    assert "CCv3 decorator '@@dont_activate' applied: disabled (never fires)" in report.warnings[0]
    assert export_book(report.books[0]) == doc


def test_always_on_entries_that_cannot_fit_together_are_named() -> None:
    """Budgets walk always-on entries by rank (highest order first): the ones that find no room
    left are named with the budget and what they need; one too long alone is budget_warnings'."""
    doc = {
        "entries": {
            "0": st_entry(0, constant=True, order=30, content="a" * 60, comment="top"),
            "1": st_entry(1, constant=True, order=20, content="b" * 50, comment="middle"),
            "2": st_entry(2, constant=True, order=10, content="c" * 30, comment="low"),
            "3": st_entry(3, constant=True, order=5, content="d" * 10, disable=True),
        }
    }
    cfg = WorldBookRecallConfig(max_always_chars=100)
    text = "\n".join(parse_import(json.dumps(doc).encode(), book_id="b", config=cfg).warnings)
    assert (
        "the 3 always-on entries need 140 chars / 36 tokens together; a turn gives them 100 chars "
        "(always budget) and no token limit: 1 cannot fit with the others" in text
    )
    assert (
        "always-on entry 'b-1' (middle) cannot fit with the always-on entries ranked above it "
        "(top): it needs 50 chars, they leave 40 of the always budget (100 chars)" in text
    )
    assert "'b-2'" not in text and "'b-3'" not in text  # low fits in what is left; 3 is disabled
    # the seed's entry cap is not SillyTavern's: an imported book is never cut by it
    by_count = WorldBookRecallConfig(max_entries=1)
    text = "\n".join(parse_import(json.dumps(doc).encode(), book_id="b", config=by_count).warnings)
    assert "max_entries" not in text
    alone = WorldBookRecallConfig(max_always_chars=40, oversize="skip")
    text = "\n".join(parse_import(json.dumps(doc).encode(), book_id="b", config=alone).warnings)
    assert "entry 'b-0' (top) needs 60 chars" in text  # too long on its own
    assert "always-on entry 'b-0'" not in text and "always-on entry 'b-1'" not in text
    assert "always-on entry 'b-2'" not in text  # 30 fits: nothing else was taken
