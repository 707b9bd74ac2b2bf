"""What a new operator trips over at the command line: start-up cost and bad URLs.

Each command runs as a real subprocess (``python -m nekoflow``) with a clean environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

REPO = Path(__file__).resolve().parents[2]


def run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    base.update(NEKOFLOW_DATABASE_URL=f"sqlite:///{tmp_path / 'cli.db'}", COLUMNS="80")
    base.update(env)
    return subprocess.run(
        [sys.executable, "-m", "nekoflow", *args],
        cwd=tmp_path,
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
    )


def imported_modules(args: list[str], tmp_path: Path) -> set[str]:
    """The modules ``nekoflow <args>`` imports (from ``python -X importtime``)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "nekoflow", *args],
        cwd=tmp_path,
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {
        line.split("|")[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


@pytest.mark.parametrize("args", [["--help"], ["version"]])
def test_help_and_version_import_none_of_the_heavy_parts(args: list[str], tmp_path: Path) -> None:
    modules = imported_modules(args, tmp_path)
    heavy = {"celery", "sqlalchemy", "sqlmodel", "fastapi", "openai", "redis", "kombu"}
    assert not heavy & {m.split(".")[0] for m in modules}, heavy & modules
    assert not any(m.startswith("nekoflow.") and m != "nekoflow.cli" for m in modules), sorted(
        m for m in modules if m.startswith("nekoflow.")
    )


def test_help_still_lists_every_command_and_subcommands_work(tmp_path: Path) -> None:
    out = run(["--help"], tmp_path).stdout
    for name in ("demo", "worldbook", "serve", "character", "rereview", "turn", "runs", "gateway"):
        assert name in out
    gateway = run(["gateway", "--help"], tmp_path)
    assert gateway.returncode == 0 and "telegram" in gateway.stdout and "feishu" in gateway.stdout
    runs = run(["runs", "--help"], tmp_path)
    assert runs.returncode == 0 and "--status" in runs.stdout
    assert run(["version"], tmp_path).stdout.strip()


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("NEKOFLOW_DATABASE_URL", "mysql://u@127.0.0.1/x"),
        ("NEKOFLOW_DATABASE_URL", "not-a-url"),
        ("NEKOFLOW_REDIS_URL", "localhost:6379"),
        ("NEKOFLOW_BROKER_URL", "not a url"),
    ],
)
def test_a_malformed_url_is_one_line_naming_the_variable(
    variable: str, value: str, tmp_path: Path
) -> None:
    proc = run(["runs"], tmp_path, **{variable: value})
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and variable in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_a_database_that_does_not_exist_is_one_line(tmp_path: Path) -> None:
    pg = os.environ.get("NEKOFLOW_TEST_DATABASE_URL")
    if pg:
        url = pg.rsplit("/", 1)[0] + "/nekoflow_no_such_database"
    else:  # SQLite: a directory that does not exist
        url = f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}"
    proc = run(["runs"], tmp_path, NEKOFLOW_DATABASE_URL=url)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "NEKOFLOW_DATABASE_URL" in lines[0], proc.stderr


@pytest.mark.parametrize("variable", ["NEKOFLOW_BROKER_URL", "NEKOFLOW_REDIS_URL"])
def test_an_unreachable_broker_or_redis_writes_no_turn(
    variable: str, tmp_path: Path, redis_url: str
) -> None:
    env = {"NEKOFLOW_BROKER_URL": redis_url, "NEKOFLOW_REDIS_URL": redis_url}
    env[variable] = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    proc = run(["turn", "你好"], tmp_path, **env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and variable in lines[0], proc.stderr
    db = tmp_path / "cli.db"
    if db.exists():
        engine = create_engine(f"sqlite:///{db}")
        if "turn_run" in inspect(engine).get_table_names():
            with engine.connect() as conn:
                assert conn.execute(text("SELECT count(*) FROM turn_run")).scalar() == 0
