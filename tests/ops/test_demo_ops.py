"""``nekoflow demo`` against a real broker (issue 15): no worker → one line saying to start one,
nothing written; with workers, the final table shows only the demo character's scopes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import inspect, text
from sqlmodel import Session

from nekoflow.storage import create_all, make_engine
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import Relationship

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def demo(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    base.update(env, COLUMNS="200", PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "nekoflow", "demo"],
        cwd=REPO,
        env=base,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_no_worker_is_one_line_saying_to_start_one(tmp_path: Path, redis_url: str) -> None:
    db = tmp_path / "demo.db"
    env = {
        "NEKOFLOW_DATABASE_URL": f"sqlite:///{db}",
        "NEKOFLOW_BROKER_URL": redis_url,
        "NEKOFLOW_REDIS_URL": redis_url,
        "NEKOFLOW_RESULT_BACKEND": redis_url,
    }
    proc = demo(tmp_path, env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no Celery worker answered" in lines[0], proc.stderr
    assert "celery -A nekoflow.worker worker" in lines[0] and "Traceback" not in proc.stdout
    if db.exists():
        engine = make_engine(f"sqlite:///{db}")
        if "turn_run" in inspect(engine).get_table_names():
            with engine.connect() as conn:
                assert conn.execute(text("SELECT count(*) FROM turn_run")).scalar() == 0


def test_relationship_table_lists_only_the_demo_characters_scopes(
    workers, worker_env, tmp_path: Path
) -> None:
    db = tmp_path / "shared.db"
    engine = make_engine(f"sqlite:///{db}")
    create_all(engine)
    with Session(engine) as s:
        first = Role.new("钦灵")
        other = Role.new("风堇")
        s.add(first)
        s.add(other)
        s.commit()
        s.add(Relationship(role_id=other.id, scope_id="web:conversation:someone-else"))
        s.add(Relationship(role_id=first.id, scope_id="web:conversation:unrelated"))
        s.commit()
    env = {k: v for k, v in worker_env.items() if k.startswith("NEKOFLOW_")}
    env["NEKOFLOW_DATABASE_URL"] = f"sqlite:///{db}"
    workers.env = {**workers.env, "NEKOFLOW_DATABASE_URL": f"sqlite:///{db}"}
    workers.start()
    proc = demo(tmp_path, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr + workers.logs()
    table = proc.stdout[proc.stdout.index("钦灵's relationships") :]
    assert "demo-web" in table and "qq:group:424242" in table
    assert "someone-else" not in table and "unrelated" not in table
