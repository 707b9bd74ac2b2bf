"""``nekoflow worldbook import --replace|--character|--global``, ``delete``, ``bind``, ``unbind``
with the corpus lorebooks and cards (issue 30): an edited lorebook re-imported replaces its book,
World Info binds to nothing unless told, a card's linked World Info is the card's own book."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nekoflow.cli import app
from nekoflow.settings import get_settings
from nekoflow.storage import reset_engine
from tests.corpus import corpus_file


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CliRunner]:
    monkeypatch.setenv("NEKOFLOW_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    get_settings.cache_clear()
    reset_engine()
    yield CliRunner()
    reset_engine()
    get_settings.cache_clear()


def _ok(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _books(runner: CliRunner) -> list[dict[str, Any]]:
    return json.loads(_ok(runner, "worldbook", "list", "--json"))


def _matched(runner: CliRunner, message: str, *extra: str) -> list[str]:
    out = json.loads(_ok(runner, "worldbook", "test-match", message, "--json", *extra))
    return [m["entry_id"] for m in out["matches"]]


def test_an_edited_lorebook_re_imported_with_replace_replaces_the_book_of_its_name(
    runner: CliRunner, tmp_path: Path
) -> None:
    doc = json.loads(corpus_file("st_Eldoria.json").read_text("utf-8"))
    src = tmp_path / "Eldoria.json"
    src.write_text(json.dumps(doc), encoding="utf-8")
    _ok(runner, "worldbook", "import", str(src), "--global")
    [book] = _books(runner)
    first = next(iter(doc["entries"].values()))
    first["content"] = "Eldoria, rewritten by its author."
    src.write_text(json.dumps(doc), encoding="utf-8")

    refused = runner.invoke(app, ["worldbook", "import", str(src)])
    assert refused.exit_code == 1
    assert "a book of that name is stored already" in refused.output
    assert "--replace" in refused.output
    out = _ok(runner, "worldbook", "import", str(src), "--replace")
    assert f"replaced book {book['id']} 'Eldoria' (same name)" in out
    [again] = _books(runner)  # one book, the same id, still bound as it was
    assert again["id"] == book["id"] and again["enabled"] and again["character_ids"] == []
    exported = json.loads(_ok(runner, "worldbook", "export", "--book", book["id"]))
    contents = [e["content"] for e in exported["world_books"][book["id"]]["entries"].values()]
    assert "Eldoria, rewritten by its author." in contents


def test_world_info_binds_to_nothing_unless_told_then_bind_unbind_delete(
    runner: CliRunner,
) -> None:
    src = corpus_file("ossi_honkai_sillytavern.json")
    out = _ok(runner, "worldbook", "import", str(src))
    assert "bound to no character, so it never fires" in out
    [book] = _books(runner)
    assert (book["enabled"], book["character_ids"]) == (False, [])
    assert "characters: (none)" in _ok(runner, "worldbook", "list")
    message = "Tell me about Kiana Kaslana (K-423)"
    _ok(runner, "character", "add", "Kiana")
    _ok(runner, "character", "add", "Mei")
    assert _matched(runner, message, "--character", "Kiana") == []  # fires for no one

    out = _ok(runner, "worldbook", "bind", book["id"], "Kiana")
    assert "bound to Kiana" in out
    assert _matched(runner, message, "--character", "Kiana")
    assert _matched(runner, message, "--character", "Mei") == []  # only Kiana's
    out = _ok(runner, "worldbook", "unbind", book["id"], "Kiana")
    assert "never fires" in out  # bound to nobody: disabled, not global
    assert _matched(runner, message, "--character", "Mei") == []
    assert "every character" in _ok(runner, "worldbook", "bind", book["id"], "--global")
    assert _matched(runner, message, "--character", "Mei")

    bad = runner.invoke(app, ["worldbook", "bind", book["id"], "Nobody"])
    assert bad.exit_code == 2 and "no character 'Nobody'" in bad.output
    out = _ok(runner, "worldbook", "delete", book["id"])
    assert f"deleted book {book['id']} Honkai Impact RPG (34 entries)" in out
    assert _books(runner) == []
    missing = runner.invoke(app, ["worldbook", "delete", book["id"]])
    assert missing.exit_code == 1 and "no such world book" in missing.output


def test_import_character_binds_a_world_info_file(runner: CliRunner) -> None:
    _ok(runner, "character", "add", "Kiana")
    src = corpus_file("ossi_honkai_sillytavern.json")
    _ok(runner, "worldbook", "import", str(src), "--character", "Kiana")
    [book] = _books(runner)
    assert (book["enabled"], book["character_ids"]) == (True, ["Kiana"])


def _linked_world_info(card: dict[str, Any]) -> dict[str, Any]:
    """The World Info file a card links (SillyTavern's shape), from the card's embedded copy."""
    entries = {}
    for n, e in enumerate(card["data"]["character_book"]["entries"]):
        entries[str(n)] = {
            "uid": n,
            "key": e.get("keys") or [],
            "keysecondary": e.get("secondary_keys") or [],
            "comment": e.get("comment", ""),
            "content": e.get("content", ""),
            "constant": bool(e.get("constant")),
            "selective": bool(e.get("selective")),
            "order": e.get("insertion_order", 100),
            "disable": not e.get("enabled", True),
        }
    return {"entries": entries}


def test_the_world_info_a_card_links_is_the_cards_own_book_never_a_second_one(
    runner: CliRunner, tmp_path: Path
) -> None:
    card_path = corpus_file("lide_ai_v3.json")
    card = json.loads(card_path.read_text("utf-8"))
    assert card["data"]["extensions"]["world"] == "爱"
    _ok(runner, "character", "import", str(card_path))
    [book] = _books(runner)  # the card's character_book, bound to the character
    assert book["character_ids"] == ["爱"]
    world = _linked_world_info(card)
    world["entries"]["0"]["content"] = "修仙世界,作者改过的设定。"
    linked = tmp_path / "爱.json"  # SillyTavern names a World Info by its file
    linked.write_text(json.dumps(world, ensure_ascii=False), encoding="utf-8")

    refused = runner.invoke(app, ["worldbook", "import", str(linked)])
    assert refused.exit_code == 1
    assert "is the World Info that character '爱' links" in refused.output
    assert "--replace" in refused.output
    assert [b["id"] for b in _books(runner)] == [book["id"]]
    out = _ok(runner, "worldbook", "import", str(linked), "--replace")
    assert f"replaced book {book['id']}" in out and "linked by character '爱'" in out
    [after] = _books(runner)  # still one book: the card's, bound to its character
    assert after["id"] == book["id"] and after["character_ids"] == ["爱"] and after["enabled"]
    exported = json.loads(_ok(runner, "worldbook", "export", "--book", book["id"]))
    contents = [e["content"] for e in exported["world_books"][book["id"]]["entries"].values()]
    assert "修仙世界,作者改过的设定。" in contents
