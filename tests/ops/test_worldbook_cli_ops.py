"""``nekoflow worldbook`` as a new operator meets it (issue 15): importing a book that exists
says what happened and how to replace it; ``list`` keeps long ids whole at 80 columns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LONG_ID = "a-very-long-world-book-identifier-for-the-seaside-cat-cafe-2026"


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env.update(COLUMNS="80", NEKOFLOW_DATABASE_URL=f"sqlite:///{tmp_path / 'wb.db'}")
    return subprocess.run(
        [sys.executable, "-m", "nekoflow", "worldbook", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_reimport_says_it_exists_and_how_to_replace(tmp_path: Path) -> None:
    doc = json.loads((REPO / "examples" / "world_books.json").read_text(encoding="utf-8"))
    book = next(iter(doc["world_books"].values()))
    doc = {"world_books": {LONG_ID: {**book, "id": LONG_ID}}}
    path = tmp_path / "books.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    assert cli(tmp_path, "import", str(path)).returncode == 0
    again = cli(tmp_path, "import", str(path))
    assert again.returncode == 1
    message = again.stderr.replace("\n", " ")
    assert "rejected: rejected" not in message
    assert f"book '{LONG_ID}': already exists" in message
    assert f"nekoflow worldbook import {path} --replace" in message
    listed = cli(tmp_path, "list")
    assert listed.returncode == 0
    assert any(line.startswith(f"{LONG_ID}  ") for line in listed.stdout.splitlines())
    assert cli(tmp_path, "import", str(path), "--replace").returncode == 0
