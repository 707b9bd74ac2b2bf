"""Operators watch the pipeline in Flower: real Flower, real worker, tasks read back over HTTP.

Flower runs behind basic auth (as docker-compose.yml starts it): without credentials every page
answers 401, the task table included; with them it shows ids, never text, and scope ids only as
keyed hashes (the default ``NEKOFLOW_MONITORING_SCOPE_IDS=hashed``).
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tasks import enqueue_turn

from .conftest import REPO, wait_for

SECRET = "我的秘密消息不该出现在监控里"
AUTH = "ops:flower-s3cret"
HEADERS = {"Authorization": "Basic " + base64.b64encode(AUTH.encode()).decode()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str, headers: dict[str, str] = HEADERS):
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=5) as resp:
        return json.loads(resp.read())


DATATABLE = "/tasks/datatable?draw=1&start=0&length=100&search[value]=&order[0][column]=0"


def assert_closed(base: str, path: str, headers: dict[str, str]) -> None:
    with pytest.raises(urllib.error.HTTPError) as err:
        get_json(base + path, headers)
    assert err.value.code == 401, (path, err.value.code)


def test_flower_shows_stages_with_ids_but_never_the_text(
    live, workers, worker_env, tmp_path
) -> None:
    port = free_port()
    log = (tmp_path / "flower.log").open("w")
    flower = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "tasks",
            "flower",
            f"--port={port}",
            "--address=127.0.0.1",
            f"--basic-auth={AUTH}",
        ],
        cwd=REPO,
        env=worker_env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        base = f"http://127.0.0.1:{port}"

        def flower_up() -> bool:
            try:
                get_json(f"{base}/api/workers?refresh=false")
                return True
            except OSError:
                return False

        wait_for(flower_up, 30, "flower to listen", lambda: (tmp_path / "flower.log").read_text())
        workers.start()
        time.sleep(1.0)  # let Flower attach to the event stream before the turn runs
        handle = enqueue_turn("web", {"session_id": "flower", "message": SECRET, "user_id": "u9"})
        handle.wait(timeout=30)
        assert handle.status() == "done"

        def all_stages_seen() -> bool:
            # Every stage seen, and each of the turn's tasks in a final state: Flower's events
            # arrive on their own schedule (a task may still show STARTED after the turn ended).
            tasks = get_json(f"{base}/api/tasks")
            ours = [t for t in tasks.values() if handle.turn_id in str(t.get("args"))]
            if any(t.get("state") not in ("SUCCESS", "FAILURE", "REVOKED") for t in ours):
                return False
            names = {t.get("name") for t in ours}
            return {
                f"nekoflow.turn.{s}"
                for s in (
                    "dispatch",
                    "before_turn",
                    "llm_call",
                    "memory_build",
                    "review",
                    "apply_deltas",
                )
            } <= names

        wait_for(all_stages_seen, 30, "flower to see every stage", workers.logs)
        tasks = get_json(f"{base}/api/tasks")
        mine = [t for t in tasks.values() if handle.turn_id in str(t.get("args"))]
        assert [t["name"] for t in mine if t["state"] != "SUCCESS"] == []
        for t in mine:
            assert "'h:" in t["args"]  # the scope id as a keyed hash
            assert t["name"].rsplit(".", 1)[-1] in t["kwargs"]  # the stage, via kwargsrepr
        assert SECRET not in json.dumps(tasks, ensure_ascii=False)
        table = get_json(base + DATATABLE)
        assert handle.turn_id in json.dumps(table)
        for body in (tasks, table):
            assert "web:conversation:flower" not in json.dumps(body, ensure_ascii=False)
        # without credentials (or with wrong ones) nothing answers: not the API, not the table
        wrong = {"Authorization": "Basic " + base64.b64encode(b"ops:guess").decode()}
        for path in ("/api/tasks", DATATABLE, "/api/workers", "/tasks", "/"):
            assert_closed(base, path, {})
            assert_closed(base, path, wrong)
        queues = {t["name"]: (t.get("routing_key") or "") for t in mine}
        assert queues["nekoflow.turn.llm_call"] == "llm"
        assert queues["nekoflow.turn.dispatch"] == "turns"
    finally:
        flower.terminate()
        flower.wait(timeout=10)
