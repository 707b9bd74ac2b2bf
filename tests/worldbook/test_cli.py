"""``nekoflow worldbook …`` through Typer's CliRunner against a temporary SQLite database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nekoflow.cli import app
from nekoflow.settings import get_settings
from nekoflow.storage import reset_engine
from tests.seed_data import seed_book

SEED_DOC = {"world_books": {"wb": seed_book("wb", description="")}}


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CliRunner]:
    monkeypatch.setenv("NEKOFLOW_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    get_settings.cache_clear()
    reset_engine()
    yield CliRunner()
    reset_engine()
    get_settings.cache_clear()


def test_import_list_test_match_export(runner: CliRunner, tmp_path: Path) -> None:
    src = tmp_path / "world_books.json"
    src.write_text(json.dumps(SEED_DOC, ensure_ascii=False), encoding="utf-8")
    result = runner.invoke(app, ["worldbook", "import", str(src)])
    assert result.exit_code == 0, result.output
    assert "imported 1 book(s), 1 entries from world_books.json" in result.output

    result = runner.invoke(app, ["worldbook", "list", "--json"])
    assert json.loads(result.output)[0]["name"] == "翁法罗斯"
    result = runner.invoke(app, ["worldbook", "list"])
    assert "翁法罗斯" in result.output

    assert runner.invoke(app, ["character", "add", "风堇"]).exit_code == 0
    args = [
        "worldbook",
        "test-match",
        "进去看看",
        "--character",
        "风堇",
        "--recent",
        "assistant:你们抵达了白塔门前,风堇望着塔顶的火种纹章沉默。",
        "--scene",
        "location=白塔",
        "--scene",
        "arc=火种仪式前夕",
    ]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["success"] is True
    [match] = payload["matches"]
    assert match["trigger_sources"] == ["assistant_recent", "scene_state"]
    assert (match["score"], match["matched_keywords"]) == (155, ["白塔"])
    assert match["world_book_name"] == "翁法罗斯" and match["entry_id"] == "white_tower_oath"

    result = runner.invoke(app, args)
    assert "白塔旧誓 (white_tower_oath) in 翁法罗斯 — score 155" in result.output
    assert "sources: assistant_recent, scene_state" in result.output
    assert "keywords: 白塔" in result.output
    result = runner.invoke(app, ["worldbook", "test-match", "无关", "--character", "风堇"])
    assert "no entries matched" in result.output
    # issue 15: the character's id works like its name; an unknown character is an error
    by_id = [a if a != "风堇" else "1" for a in args]
    result = runner.invoke(app, [*by_id, "--json"])
    assert [m["entry_id"] for m in json.loads(result.output)["matches"]] == ["white_tower_oath"]
    result = runner.invoke(app, ["worldbook", "test-match", "无关", "--character", "别人"])
    assert result.exit_code == 2 and "no character '别人'" in result.output
    assert "1 风堇" in result.output

    out = tmp_path / "out.json"
    result = runner.invoke(app, ["worldbook", "export", str(out)])
    assert result.exit_code == 0, result.output
    exported = json.loads(out.read_text(encoding="utf-8"))
    entry = exported["world_books"]["wb"]["entries"]["white_tower_oath"]
    assert {k: entry[k] for k in SEED_DOC["world_books"]["wb"]["entries"]["white_tower_oath"]} == (
        SEED_DOC["world_books"]["wb"]["entries"]["white_tower_oath"]
    )
    result = runner.invoke(app, ["worldbook", "export", "--book", "wb"])
    assert json.loads(result.output) == exported

    # a second import of the same file conflicts, unless --replace
    result = runner.invoke(app, ["worldbook", "import", str(src)])
    assert result.exit_code == 1 and "already exists" in result.output
    result = runner.invoke(app, ["worldbook", "import", str(src), "--replace"])
    assert result.exit_code == 0, result.output


def test_import_sillytavern_reports_unmapped_and_rejects_bad_files(
    runner: CliRunner, tmp_path: Path
) -> None:
    wi = {
        "entries": {
            "0": {"uid": 0, "key": ["龙"], "content": "龙", "probability": 30, "vectorized": True},
            "1": {"uid": 1, "key": 5, "content": "bad"},
        }
    }
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(wi), encoding="utf-8")
    result = runner.invoke(app, ["worldbook", "import", str(bad)])
    assert result.exit_code == 1
    assert "entry '1'" in result.output and "key must be a list of strings" in result.output
    assert json.loads(runner.invoke(app, ["worldbook", "list", "--json"]).output) == []

    del wi["entries"]["1"]
    good = tmp_path / "dragons.json"
    good.write_text(json.dumps(wi), encoding="utf-8")
    result = runner.invoke(app, ["worldbook", "import", str(good), "--dry-run"])
    assert "would import 1 book(s), 1 entries" in result.output
    assert json.loads(runner.invoke(app, ["worldbook", "list", "--json"]).output) == []
    result = runner.invoke(app, ["worldbook", "import", str(good)])
    assert result.exit_code == 0, result.output
    assert "dragons" in result.output and "vectorized=True is kept for export but not applied" in (
        result.output
    )
    assert "probability" not in result.output  # mapped
    result = runner.invoke(app, ["worldbook", "export", "--book", "nope"])
    assert result.exit_code == 1 and "no such world book" in result.output


def test_bad_cli_arguments(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["worldbook", "test-match", "x", "--scene", "novalue"])
    assert result.exit_code == 2 and "KEY=VALUE" in result.output
    result = runner.invoke(app, ["worldbook", "import", str(tmp_path / "missing.json")])
    assert result.exit_code == 1 and "cannot read" in result.output
