"""``/api/proactive`` and ``nekoflow proactive list|cancel``: the operator lists the messages
characters will start and cancels one; bad input names the field; the token is required."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from nekoflow.proactive import store
from nekoflow.proactive.tables import ProactiveSchedule
from nekoflow.storage import create_all, make_engine

DUE = datetime(2026, 3, 5, 23, 0, tzinfo=UTC)


def _plan(engine: Engine, key: str, kind: str = "reminder", note: str | None = "起床") -> None:
    with engine.begin() as conn:
        store.add_schedule(
            conn,
            ProactiveSchedule(
                key=key,
                kind=kind,
                channel="telegram",
                scope_id="telegram:private:9",
                due_at=DUE,
                note=note,
                request={"channel": "telegram", "conversation_id": "9", "user_id": "9"},
            ),
        )


def test_list_and_cancel(client: TestClient, engine: Engine, auth: dict) -> None:
    _plan(engine, "reminder:t1")
    _plan(engine, "follow_up:t1:1", kind="follow_up", note=None)
    r = client.get("/api/proactive", headers=auth)
    assert r.status_code == 200
    rows = r.json()["schedules"]
    assert [(x["kind"], x["state"], x["note"]) for x in rows] == [
        ("reminder", "due", "起床"),
        ("follow_up", "due", None),
    ]
    assert "request" not in rows[0]  # ids, times and the note: not the chat's request
    first = rows[0]["id"]
    done = client.post(f"/api/proactive/{first}/cancel", headers=auth)
    assert done.status_code == 200 and done.json()["state"] == "cancelled"
    again = client.post(f"/api/proactive/{first}/cancel", headers=auth)
    assert again.status_code == 409 and "only a due schedule" in again.json()["error"]
    assert client.post("/api/proactive/999/cancel", headers=auth).status_code == 404
    left = client.get("/api/proactive", headers=auth).json()["schedules"]
    assert [x["kind"] for x in left] == ["follow_up"]
    every = client.get("/api/proactive?state=all&scope=telegram:private:9", headers=auth)
    assert len(every.json()["schedules"]) == 2
    bad = client.get("/api/proactive?state=soon", headers=auth)
    assert bad.status_code == 422 and "state" in bad.text
    assert client.get("/api/proactive").status_code == 401
    assert client.post(f"/api/proactive/{first}/cancel").status_code == 401


def test_cli_list_and_cancel(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    engine = make_engine(url)
    create_all(engine)
    _plan(engine, "reminder:t9")
    engine.dispose()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env.update(NEKOFLOW_DATABASE_URL=url, NEKOFLOW_REDIS_URL="redis://127.0.0.1:1/0")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "nekoflow", "proactive", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    out = cli("list", "--json")
    assert out.returncode == 0, out.stderr
    (row,) = [json.loads(line) for line in out.stdout.splitlines()]
    assert (row["kind"], row["note"], row["state"]) == ("reminder", "起床", "due")
    assert cli("cancel", str(row["id"])).returncode == 0
    refused = cli("cancel", str(row["id"]))
    assert refused.returncode == 2 and "schedule_id" in refused.stderr
    assert "cancelled" in cli("list", "--state", "all").stdout
    bad = cli("list", "--state", "soon")
    assert bad.returncode == 2 and "(field: state)" in bad.stderr
