"""Operators watch the pipeline in Flower: real Flower, real worker, tasks read back over HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request

from tasks import enqueue_turn

from .conftest import REPO, wait_for

SECRET = "我的秘密消息不该出现在监控里"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.loads(resp.read())


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
        ],
        cwd=REPO,
        env={**worker_env, "FLOWER_UNAUTHENTICATED_API": "true"},
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
            assert "web:conversation:flower" in t["args"]
            assert t["name"].rsplit(".", 1)[-1] in t["kwargs"]  # the stage, via kwargsrepr
        assert SECRET not in json.dumps(tasks, ensure_ascii=False)
        queues = {t["name"]: (t.get("routing_key") or "") for t in mine}
        assert queues["nekoflow.turn.llm_call"] == "llm"
        assert queues["nekoflow.turn.dispatch"] == "turns"
    finally:
        flower.terminate()
        flower.wait(timeout=10)
