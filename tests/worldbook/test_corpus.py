"""Every lorebook and card book in the shared corpus: imported with nothing silently dropped,
exported back to the same SillyTavern JSON, and firing as its author wrote it (issue 17)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from nekoflow.worldbook import WorldBook, WorldBookRecallContext, place_lore
from nekoflow.worldbook.budgets import lore_recall_config
from nekoflow.worldbook.errors import WorldBookDataError
from nekoflow.worldbook.importers import ImportReport, card_json_from_png, parse_import
from nekoflow.worldbook.matcher import recall
from nekoflow.worldbook.st_export import export_book
from nekoflow.worldbook.st_fields import FIELDS, is_unset
from nekoflow.worldbook.store import WorldBookStore
from tests.corpus import CORPUS

BOOKS = [
    "st_Eldoria.json",
    "st_default_Seraphina.png",
    "st_Toaru.json",
    "st_KoboldAI_Sample.json",
    "st_issue2009_not_any.json",
    "lide_ai_v3.json",
    "ossi_hogwarts_sillytavern.json",
    "ossi_honkai_sillytavern.json",
]
NO_BOOK = ["st_Megumin_v1.png", "st_Aqua_v1.json", "st_default_CodingSensei.png"]
TURN = lore_recall_config()


def _raw(name: str) -> dict[str, Any]:
    data = (CORPUS / name).read_bytes()
    doc = card_json_from_png(data) if name.endswith(".png") else json.loads(data)
    inner = doc.get("data") if isinstance(doc.get("data"), dict) else doc
    return inner.get("character_book", doc)


def _import(name: str) -> ImportReport:
    return parse_import((CORPUS / name).read_bytes(), fallback_name=name, config=TURN)


def _raw_entries(doc: dict[str, Any]) -> list[dict[str, Any]]:
    entries = doc["entries"]
    return list(entries.values()) if isinstance(entries, dict) else list(entries)


def test_corpus_lists_every_card_and_lorebook() -> None:
    cards = {p.name for p in CORPUS.iterdir() if p.name.startswith(("st_", "lide_", "ossi_"))}
    assert cards == set(BOOKS) | set(NO_BOOK)


@pytest.mark.parametrize("name", BOOKS)
def test_imports_with_nothing_silently_dropped(name: str) -> None:
    report = _import(name)
    [book] = report.books
    raw = _raw(name)
    assert len(book.entries) == len(_raw_entries(raw))
    text = "\n".join(report.warnings)
    for entry, source in zip(book.entries, _raw_entries(raw), strict=True):
        # Every raw field is kept for export (content lives in the entry itself) …
        assert {**entry.rules.source, "content": entry.content} == source
        # … and each one nekoflow cannot apply, when set, is reported naming the entry.
        ext = source.get("extensions") or {}
        for spec in FIELDS:
            if spec.kind != "unsupported":
                continue
            for where, value in ((spec.name, source.get(spec.name)), (spec.ext, ext.get(spec.ext))):
                if where and not is_unset(value, spec.default):
                    assert f"{where}={value!r}" in text
    assert book.rules.source == {k: v for k, v in raw.items() if k != "entries"}


@pytest.mark.parametrize("name", NO_BOOK)
def test_cards_without_a_book_say_so(name: str) -> None:
    with pytest.raises(WorldBookDataError, match="no character_book"):  # not "unknown format"
        _import(name)


@pytest.mark.parametrize("name", BOOKS)
def test_export_round_trip_is_lossless(name: str) -> None:
    [book] = _import(name).books
    assert export_book(book) == _raw(name)


@pytest.mark.parametrize(
    "name", ["st_Eldoria.json", "lide_ai_v3.json", "ossi_honkai_sillytavern.json"]
)
def test_round_trip_through_the_store(engine: Engine, name: str) -> None:
    [book] = _import(name).books
    store = WorldBookStore(engine)
    [stored] = store.import_books([book])
    assert stored.rules == book.rules and stored.entries == book.entries
    assert export_book(stored) == _raw(name)
    # An edit made in nekoflow shows in the export, in the entry's own style.
    first = stored.entries[0]
    store.update_entry(
        stored.id, first.id, priority=7, rules={**first.rules.model_dump(), "sticky": 3}
    )
    edited = export_book(store.get(stored.id))  # type: ignore[arg-type]
    entry = _raw_entries(edited)[0]
    if "insertion_order" in entry and "order" not in entry:  # card style
        assert (entry["insertion_order"], entry["extensions"]["sticky"]) == (7, 3)
    else:
        assert (entry["order"], entry["sticky"]) == (7, 3)


def _fire(book: WorldBook, message: str, turn_id: str = "t") -> Any:
    ctx = WorldBookRecallContext(latest_user_message=message, turn_id=turn_id)
    return recall(ctx, [book], config=TURN)


def test_seraphina_forest_fires_the_eldoria_entry() -> None:
    [book] = _import("st_default_Seraphina.png").books
    outcome = _fire(book, "Tell me about the forest")
    first = outcome.results[0]
    assert "eldoria" in first.entry.keywords and len(first.entry.content) == 1551
    assert first.cut_to is None and first.matched_keywords == ["forest"]


def test_chinese_v3_constant_entries_reach_the_prompt() -> None:
    report = _import("lide_ai_v3.json")
    [book] = report.books
    constant = [e for e in book.entries if e.always_on and e.enabled]
    outcome = _fire(book, "你好")
    got = {r.entry.id for r in outcome.results}
    assert got and got <= {e.id for e in constant}
    # The one longer than the always budget is named at import, with what it needs.
    long_ones = [e for e in constant if len(e.content) > TURN.max_always_chars]
    for e in long_ones:
        assert any(e.id in w and "needs" in w for w in report.warnings)
    placement, _ = place_lore(outcome.results)
    assert placement.before_char or placement.after_char or placement.at_depth


def test_lide_always_on_entries_that_never_fit_are_named_at_import() -> None:
    """lide_ai_v3 has 7 always-on entries (7,675 chars); the three of highest order use up the
    always budget, so the other four never reach the prompt: the import says which, with the
    budget and what each needs — the very entries a turn drops."""
    report = _import("lide_ai_v3.json")
    [book] = report.books
    text = "\n".join(report.warnings)
    assert (
        "the 7 always-on entries need 7675 chars / 5542 tokens together; a turn gives them "
        f"{TURN.max_always_chars} chars (always budget) and {TURN.max_total_tokens} lore tokens: "
        "4 cannot fit with the others" in text
    )
    outcome = _fire(book, "你好")
    never = {d.entry_id for d in outcome.dropped if d.reason == "over_budget"}
    named = {e.id for e in book.entries if f"always-on entry {e.id!r}" in text}
    assert named == never
    assert {e.name for e in book.entries if e.id in named} == {
        "世界设定",
        "扮演准则",
        "李德_二次解释",
        "阶段指导",
    }
    world = next(e for e in book.entries if e.name == "世界设定")
    assert (
        f"always-on entry {world.id!r} (世界设定) cannot fit with the always-on entries ranked "
        "above it (变量列表, [mvu_update]变量输出格式, [mvu_update]变量更新规则): "
        f"it needs 862 chars, they leave 240 of the always budget ({TURN.max_always_chars} chars)"
        in text
    )


@pytest.mark.parametrize("name", [n for n in BOOKS if n != "lide_ai_v3.json"])
def test_always_on_entries_that_fit_are_not_reported(name: str) -> None:
    assert not any("always-on" in w for w in _import(name).warnings)


def test_harry_potter_single_long_entry_fires_cut_to_its_book_budget() -> None:
    [book] = _import("ossi_hogwarts_sillytavern.json").books
    (result,) = _fire(book, "anything").results  # constant entry
    assert result.cut_to is not None and 0 < result.cut_to < len(result.entry.content)
    assert book.rules.token_budget == 500


def test_honkai_no_entry_is_skipped_for_being_too_long() -> None:
    """Each entry fires (whole, or cut to its budget when first in line); one skipped is skipped
    only because entries ranked before it used the room it would have fitted in."""
    [book] = _import("ossi_honkai_sillytavern.json").books
    whole_tokens = min(TURN.max_total_tokens, book.rules.token_budget or TURN.max_total_tokens)
    fired_alone = 0
    for entry in book.entries:
        if not entry.enabled or not entry.keywords:
            continue
        outcome = _fire(book, f"tell me about {entry.keywords[0]}")
        fired = {r.entry.id for r in outcome.results}
        fired_alone += entry.id in fired
        for d in outcome.dropped:
            assert d.reason == "over_budget"
            limit = whole_tokens if d.unit == "tokens" else TURN.max_keyword_chars
            assert d.needed is not None and d.needed <= limit, d
    assert fired_alone >= 20


def test_issue_2009_not_any_blocks_on_its_secondary_keys() -> None:
    [book] = _import("st_issue2009_not_any.json").books
    assert [r.entry.id for r in _fire(book, "我是龙胆").results] == [book.entries[0].id]
    assert _fire(book, "我是龙胆,进入调制模式").results == []
    assert _fire(book, "龙胆 some other rare word").results == []


def test_lide_depth_entries_are_placed_at_depth() -> None:
    [book] = _import("lide_ai_v3.json").books
    at_depth = [e for e in book.entries if e.rules.position == "at_depth"]
    assert len(at_depth) == 5 and all(e.rules.depth == 0 for e in at_depth)


def test_lide_lore_is_placed_in_sillytavern_insertion_order() -> None:
    """玄天宗 (order 30) and 合欢宗 (40) go before the character, lower order first; the depth-0
    entries 变量更新规则 (140), 变量输出格式 (141) and 变量列表 (150) follow their orders too."""
    [book] = _import("lide_ai_v3.json").books
    by_content = {e.content.strip(): (e.name, e.priority) for e in book.entries}
    outcome = _fire(book, "你好 玄天宗 合欢宗")
    placement, _ = place_lore(outcome.results)
    before = [by_content[c] for c in placement.before_char]
    assert [p for _, p in before] == sorted(p for _, p in before)
    names = [n for n, _ in before]
    assert names.index("玄天宗") < names.index("合欢宗")
    depth = [by_content[i.content] for i in placement.at_depth]
    assert len(depth) >= 3 and [p for _, p in depth] == sorted(p for _, p in depth)
    assert [i.order for i in placement.at_depth] == sorted(i.order for i in placement.at_depth)


def test_edit_of_a_converted_entry_keeps_its_duplicates_in_step() -> None:
    [book] = _import("ossi_honkai_sillytavern.json").books
    entry = book.entries[0]
    entry.keywords = ["Nazoza", "ghost town"]
    entry.enabled = False
    entry.priority = 5
    out = _raw_entries(export_book(book))[0]
    assert out["key"] == out["keys"] == ["Nazoza", "ghost town"]
    assert (out["disable"], out["enabled"]) == (True, False)
    assert out["order"] == out["insertion_order"] == out["priority"] == 5
    [again] = parse_import(json.dumps(export_book(book)).encode(), config=TURN).books
    assert again.entries[0].keywords == ["Nazoza", "ghost town"]
    assert not again.entries[0].enabled and again.entries[0].priority == 5


def _lide_v3_with_decorators() -> dict[str, Any]:
    """lide_ai_v3.json with CCv3 decorators written into some entries (the corpus has none)."""
    doc = json.loads((CORPUS / "lide_ai_v3.json").read_bytes())
    by = {e["comment"]: e for e in doc["data"]["character_book"]["entries"]}
    by["玄天宗"]["content"] = "@@depth 0\n@@role user\n" + by["玄天宗"]["content"]
    by["合欢宗"]["content"] = "@@dont_activate\n\n" + by["合欢宗"]["content"]
    by["皇城"]["content"] = "@@activate_only_after 3\n@@@scan_depth 2\n" + by["皇城"]["content"]
    by["边境城市"]["content"] = (
        "@@is_greeting 1\n@@position after_desc\n" + by["边境城市"]["content"]
    )
    by["古秘境"]["content"] = "@@activate\n" + by["古秘境"]["content"]
    by["魔教控制区"]["keys"] = ["魔教?", "魔教控制区"]  # the card's use_regex is true
    return doc


def test_v3_decorators_are_applied_cut_and_reported() -> None:
    doc = _lide_v3_with_decorators()
    raw = doc["data"]["character_book"]
    report = parse_import(json.dumps(doc, ensure_ascii=False).encode(), config=TURN)
    [book] = report.books
    e = {x.name: x for x in book.entries}
    assert not any(x.content.startswith(("@@", "\n")) for x in book.entries)
    xuan = e["玄天宗"]
    assert xuan.content == raw["entries"][2]["content"].split("\n", 2)[2]
    assert (xuan.rules.position, xuan.rules.depth, xuan.rules.role) == ("at_depth", 0, "user")
    assert e["合欢宗"].enabled is False  # @@dont_activate: never fires
    assert e["皇城"].rules.scan_depth == 2  # the fallback of an unsupported decorator
    assert e["边境城市"].rules.position == "after_char"
    assert e["古秘境"].always_on is True
    text = "\n".join(report.warnings)
    for line in ("@@depth 0", "@@role user", "@@dont_activate", "@@@scan_depth 2", "@@activate"):
        assert f"CCv3 decorator {line!r} applied" in text
    for line in ("@@activate_only_after 3", "@@is_greeting 1"):
        assert f"CCv3 decorator {line!r} is not applied (not supported)" in text
    assert "use_regex=true is kept for export but not applied" in text and "['魔教?']" in text
    assert text.count("use_regex=true") == 1  # the corpus's plain keys read the same either way
    outcome = _fire(book, "玄天宗和合欢宗")
    fired = {r.entry.name for r in outcome.results}
    assert "玄天宗" in fired and "合欢宗" not in fired
    placement, _ = place_lore(outcome.results)
    [user_insert] = [i for i in placement.at_depth if i.role == "user"]
    assert (user_insert.depth, user_insert.content) == (0, xuan.content.strip())
    assert "@@" not in "\n".join([*placement.before_char, *placement.after_char])
    # Export puts the decorators back: the same JSON data.
    assert export_book(book) == raw


def test_an_edit_replaces_the_decorator_it_overrides() -> None:
    doc = _lide_v3_with_decorators()
    [book] = parse_import(json.dumps(doc, ensure_ascii=False).encode(), config=TURN).books
    xuan = next(x for x in book.entries if x.name == "玄天宗")
    xuan.rules.depth = 2
    out = next(x for x in export_book(book)["entries"] if x["comment"] == "玄天宗")
    assert out["content"].startswith("@@role user\n区域: 玄天宗")  # @@depth 0 went
    assert (out["extensions"]["position"], out["extensions"]["depth"]) == (4, 2)
    again = parse_import(json.dumps(export_book(book), ensure_ascii=False).encode()).books[0]
    xuan = next(x for x in again.entries if x.name == "玄天宗")
    assert (xuan.rules.position, xuan.rules.depth, xuan.rules.role) == ("at_depth", 2, "user")
