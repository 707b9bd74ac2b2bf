"""``nekoflow memory list|show|forget`` and the turn's memory record in ``nekoflow runs``, run in
fresh processes on a fresh SQLite database (embedded worker, scripted model, rule review)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def run_cli(tmp_path: Path, *args: str) -> Any:
    """Run ``python -m nekoflow`` in ``tmp_path`` with a fresh SQLite database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env.update(
        COLUMNS="200",
        NEKOFLOW_DATABASE_URL=f"sqlite:///{tmp_path / 'cli.db'}",
        NEKOFLOW_REDIS_URL="redis://127.0.0.1:1/0",
    )
    return subprocess.run(
        [sys.executable, "-m", "nekoflow", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_memory_commands_after_turns(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "character", "add", "钦灵").returncode == 0
    for text in ("我叫小明,谢谢你一直陪着我", "我最喜欢草莓蛋糕,谢谢你", "还记得我喜欢什么蛋糕吗"):
        out = run_cli(tmp_path, "turn", text, "--session", "s1")
        assert out.returncode == 0, out.stdout + out.stderr
    scope = "web:conversation:s1"
    out = run_cli(tmp_path, "memory", "list", "--character", "钦灵", "--scope", scope, "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert rows and all(r["scope_id"] == scope for r in rows)
    assert any("草莓" in r["content"] for r in rows)
    first = rows[-1]["id"]
    shown = run_cli(tmp_path, "memory", "show", str(first))
    assert shown.returncode == 0 and json.loads(shown.stdout)["id"] == first

    runs = run_cli(tmp_path, "runs", "--json")
    last = json.loads(runs.stdout.splitlines()[0])
    assert last["memory_refs"] and all("score" in r for r in last["memory_refs"])
    assert "草莓" not in runs.stdout  # ids and scores only
    table = run_cli(tmp_path, "runs", "--limit", "1")
    assert f"#{last['memory_refs'][0]['id']}" in table.stdout

    out = run_cli(tmp_path, "memory", "forget", str(first), "--character", "1", "--scope", scope)
    assert out.returncode == 0 and f"forgot memory #{first}" in out.stdout
    out = run_cli(tmp_path, "memory", "show", str(first))
    assert out.returncode == 2 and "field: memory_id" in out.stderr


def test_bad_input_names_the_field(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "character", "add", "钦灵").returncode == 0
    out = run_cli(tmp_path, "memory", "list", "--character", "无名", "--scope", "s")
    assert out.returncode == 2 and "field: character" in out.stderr
    out = run_cli(tmp_path, "memory", "list", "--character", "钦灵", "--scope", " ")
    assert out.returncode == 2 and "field: scope" in out.stderr
    out = run_cli(tmp_path, "memory", "list", "--character", "钦灵", "--scope", "s", "--limit", "0")
    assert out.returncode == 2 and "field: limit" in out.stderr
    out = run_cli(tmp_path, "memory", "list", "--character", "钦灵", "--scope", "s")
    assert out.returncode == 0 and "no memories" in out.stdout
    assert "Traceback" not in out.stderr
