"""Injected world-book entries are visible (``nekoflow runs``, ``GET /api/turns/{id}``), and
ids are printed whole at 80 columns and in pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fastapi.testclient import TestClient

from nekoflow.api.app import create_app
from nekoflow.storage.turns import TurnStatus
from nekoflow.turns.cli import StatusChoice
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline
from nekoflow.worldbook import WorldBook, WorldBookEntry
from nekoflow.worldbook.store import WorldBookStore

REPO = Path(__file__).resolve().parents[2]
LONG_SESSION = "a-rather-long-session-identifier-that-does-not-fit-in-a-column"


def a_turn_with_lore(deps) -> str:
    book = WorldBook(
        id="cat-cafe-lore-book",
        name="猫咖",
        entries=[
            WorldBookEntry(id="cafe-rule", name="店规", keywords=["猫"], content="店里禁止喧哗")
        ],
    )
    WorldBookStore(deps.engine).import_books([book])
    event = {"session_id": LONG_SESSION, "message": "我家的猫", "user_id": "u1"}
    handle = submit_turn(deps, "web", event)
    assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
    return handle.turn_id


def test_turn_api_lists_injected_entries_by_id_and_name(deps) -> None:
    turn_id = a_turn_with_lore(deps)
    settings = deps.settings.model_copy(update={"api_public_reads": True})
    app = create_app(settings, engine=deps.engine, turn_deps=deps)
    with TestClient(app) as client:
        body = client.get(f"/api/turns/{turn_id}").json()
    assert body["injected"] == [{"id": "cafe-rule", "name": "店规"}]
    assert "店里禁止喧哗" not in json.dumps(body, ensure_ascii=False)  # ids and names only


def test_runs_prints_whole_ids_and_injected_entries_at_80_columns(deps, tmp_path) -> None:
    if deps.engine.url.get_backend_name() != "sqlite":
        return  # the subprocess reaches the per-test PostgreSQL schema only through SQLite here
    turn_id = a_turn_with_lore(deps)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env.update(COLUMNS="80", NEKOFLOW_DATABASE_URL=str(deps.engine.url), PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-m", "nekoflow", "runs"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(line.startswith(turn_id) for line in lines), out.stdout
    assert f"    scope web:conversation:{LONG_SESSION}" in lines
    assert "    world book: cafe-rule 店规" in lines
    rows = subprocess.run(
        [sys.executable, "-m", "nekoflow", "runs", "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout.splitlines()
    assert json.loads(rows[0])["injected"] == [{"id": "cafe-rule", "name": "店规"}]


def test_status_choices_match_turn_status() -> None:
    assert [s.value for s in StatusChoice] == [s.value for s in TurnStatus]
