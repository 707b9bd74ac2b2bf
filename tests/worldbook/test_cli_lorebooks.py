"""``nekoflow worldbook`` with SillyTavern lorebooks: import notes, test-match drops, export."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from nekoflow.cli import app
from nekoflow.settings import get_settings
from nekoflow.storage import reset_engine
from nekoflow.worldbook.redis_cooldowns import RedisCooldowns
from nekoflow.worldbook.store import WorldBookStore
from tests.corpus import CORPUS


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CliRunner]:
    monkeypatch.setenv("NEKOFLOW_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setenv("NEKOFLOW_LLM_CONTEXT_WINDOW", "4000")  # 1,000 lore tokens
    get_settings.cache_clear()
    reset_engine()
    yield CliRunner()
    reset_engine()
    get_settings.cache_clear()


def test_honkai_import_test_match_and_export(runner: CliRunner, tmp_path: Path) -> None:
    src = CORPUS / "ossi_honkai_sillytavern.json"
    # World Info binds to nothing unless told: --global, as SillyTavern's global selection
    result = runner.invoke(app, ["worldbook", "import", str(src), "--global"])
    assert result.exit_code == 0, result.output
    assert "imported 1 book(s), 34 entries from sillytavern_world_info" in result.output
    assert "needs" in result.output and "token_budget 500" in result.output  # named, with need
    book_id = result.output.split("\n")[1].split()[0]

    result = runner.invoke(app, ["worldbook", "test-match", "Tell me about Kiana Kaslana (K-423)"])
    assert result.exit_code == 0, result.output
    assert "cut to" in result.output  # the 38,868-char entry, first in line, cut to fit
    result = runner.invoke(
        app, ["worldbook", "test-match", "Raiden Mei and Kiana Kaslana (K-423)", "--json"]
    )
    body = json.loads(result.output)
    assert body["matches"] and body["dropped"]
    assert {d["reason"] for d in body["dropped"]} <= {"over_budget", "max_entries"}
    result = runner.invoke(app, ["worldbook", "test-match", "Raiden Mei and Kiana Kaslana (K-423)"])
    assert "matched but dropped" in result.output and "over budget (needs" in result.output

    out = tmp_path / "honkai.json"
    result = runner.invoke(
        app, ["worldbook", "export", str(out), "--book", book_id, "--format", "sillytavern"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text(encoding="utf-8")) == json.loads(src.read_text("utf-8"))
    assert (
        runner.invoke(app, ["worldbook", "import", str(CORPUS / "st_Eldoria.json")]).exit_code == 0
    )
    result = runner.invoke(app, ["worldbook", "export", "--format", "sillytavern"])
    assert result.exit_code == 2 and "exports one book" in result.output


def test_test_match_reads_a_scopes_cooldowns_from_redis(
    runner: CliRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    redis_url: str,
    redis_client: redis.Redis,
) -> None:
    monkeypatch.setenv("NEKOFLOW_REDIS_URL", redis_url)
    monkeypatch.setenv("NEKOFLOW_COOLDOWN_BACKEND", "redis")
    monkeypatch.setenv("NEKOFLOW_REDIS_PREFIX", "cli-test")
    get_settings.cache_clear()
    src = CORPUS / "st_Eldoria.json"
    result = runner.invoke(app, ["worldbook", "import", str(src), "--global"])
    assert result.exit_code == 0, result.output
    book_id = result.output.split("\n")[1].split()[0]
    WorldBookStore(get_settings().database_url).update_entry(
        book_id, f"{book_id}-0", cooldown_turns=3
    )
    RedisCooldowns(redis_client, prefix="cli-test").record("web:1", "t1", [f"{book_id}-0"])
    args = ["worldbook", "test-match", "the forest of Eldoria", "--json"]
    free = json.loads(runner.invoke(app, args).output)
    assert f"{book_id}-0" in [m["entry_id"] for m in free["matches"]]
    held = json.loads(runner.invoke(app, [*args, "--scope", "web:1"]).output)
    assert f"{book_id}-0" not in [m["entry_id"] for m in held["matches"]]
    assert {"entry_id": f"{book_id}-0", "reason": "cooldown"}.items() <= next(
        d for d in held["dropped"] if d["entry_id"] == f"{book_id}-0"
    ).items()


def test_test_match_on_a_new_scope_scans_the_cards_greeting(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    """A scope's first turn writes the card's greeting, then recalls: test-match --scope with the
    character scans the greeting too (lide_ai_v3's greeting names 沈念)."""
    monkeypatch.setenv("NEKOFLOW_REDIS_URL", redis_url)
    monkeypatch.setenv("NEKOFLOW_COOLDOWN_BACKEND", "redis")
    monkeypatch.setenv("NEKOFLOW_LLM_CONTEXT_WINDOW", "131072")
    get_settings.cache_clear()
    card = CORPUS / "lide_ai_v3.json"
    result = runner.invoke(app, ["character", "import", str(card)])
    assert result.exit_code == 0, result.output
    args = ["worldbook", "test-match", "最近怎么样？", "--json", "--character", "1"]
    bare = json.loads(runner.invoke(app, args).output)
    scoped = json.loads(runner.invoke(app, [*args, "--scope", "web:conversation:new"]).output)
    bare_names = {m["entry_name"] for m in bare["matches"]}
    scoped_names = {m["entry_name"] for m in scoped["matches"]}
    assert "沈念_三面性" in scoped_names - bare_names
    unnamed = runner.invoke(app, [*args[:3], "--scope", "web:conversation:new"])
    assert unnamed.exit_code == 0 and "has no turns yet" in unnamed.output
