"""One Celery app under two names: ``celery -A nekoflow.worker`` (the installed package, from
anywhere) and ``celery -A tasks`` (the checkout's alias), with the same tasks, routes and beat.

Each name is resolved by Celery's own ``-A`` lookup in a fresh process (nothing else imported);
the whole configuration is compared as ``celery report`` prints it.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from setuptools import find_packages

REPO = Path(__file__).resolve().parents[2]

APP_FACTS = r"""
import json, sys
from celery.app.utils import find_app

app = find_app(sys.argv[1])  # what `celery -A <name>` loads
app.loader.import_default_modules()
print(json.dumps({
    "main": app.main,
    "tasks": sorted(name for name in app.tasks if not name.startswith("celery.")),
    "routes": app.conf.task_routes,
    "default_queue": app.conf.task_default_queue,
    "beat": {k: [v["task"], v["schedule"]] for k, v in app.conf.beat_schedule.items()},
    "serializer": app.conf.task_serializer,
    "acks_late": app.conf.task_acks_late,
    "report": app.conf.humanize(with_defaults=False, censored=True),  # as `celery report` prints
}))
"""

STAGE_TASKS = {
    f"nekoflow.turn.{stage}"
    for stage in ("dispatch", "before_turn", "llm_call", "memory_build", "review", "apply_deltas")
}


def _env() -> dict[str, str]:
    """The environment without NEKOFLOW_* settings (every process reads the same defaults)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}


def _run(args: list[str], cwd: Path) -> str:
    proc = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _facts(name: str, cwd: Path = REPO) -> dict[str, Any]:
    return json.loads(_run(["-c", APP_FACTS, name], cwd).strip().splitlines()[-1])


def test_both_names_start_the_same_app(tmp_path: Path) -> None:
    """Same task names, queues, routes, beat schedule and settings under ``-A tasks`` (in the
    checkout) and ``-A nekoflow.worker`` (from a directory without the checkout's ``tasks/``)."""
    checkout = _facts("tasks")
    installed = _facts("nekoflow.worker", tmp_path)
    assert installed == checkout
    assert checkout["main"] == "nekoflow"
    assert STAGE_TASKS | {
        "nekoflow.turn.deliver",
        "nekoflow.turn.typing",
        "nekoflow.sweep",
        "nekoflow.rereview.batch",
        "nekoflow.memory.summarize",
        "nekoflow.memory.embed",
    } <= set(checkout["tasks"])
    assert checkout["routes"]["nekoflow.turn.llm_call"] == {"queue": "llm"}
    assert checkout["routes"]["nekoflow.turn.deliver"] == {"queue": "outbound"}
    assert checkout["default_queue"] == "turns"
    assert checkout["beat"]["nekoflow-sweep"][0] == "nekoflow.sweep"
    assert checkout["serializer"] == "json" and checkout["acks_late"] is True
    assert "task_routes" in checkout["report"] and "nekoflow-sweep" in checkout["report"]


def test_tasks_modules_are_the_worker_modules() -> None:
    """``tasks.<m>`` is the very module ``nekoflow.worker.<m>``: a patch of one is a patch of the
    other, and ``tasks.app`` stays the Celery app."""
    import nekoflow.worker as worker
    import tasks

    names = [info.name for info in pkgutil.iter_modules(worker.__path__)]
    assert {"app", "config", "deliver", "runtime", "turns", "embedded", "demo"} <= set(names)
    for name in names:
        assert importlib.import_module(f"tasks.{name}") is sys.modules[f"nekoflow.worker.{name}"]
    assert tasks.app is worker.app and type(worker.app).__name__ == "Celery"
    assert tasks.turns.publish_turn is worker.turns.publish_turn
    import celeryconfig

    assert celeryconfig.task_routes == worker.app.conf.task_routes


LIBRARY_EDGES = r"""
import json, sys
import nekoflow.api.app, nekoflow.api.deps, nekoflow.cli, nekoflow.doctor.runner
import nekoflow.platforms.feishu.cli, nekoflow.platforms.onebot.cli
import nekoflow.platforms.qqbot.cli, nekoflow.platforms.telegram.cli
import nekoflow.rereview.cli, nekoflow.turns.cli, nekoflow.turns.enqueue, nekoflow.turns.notice
import nekoflow.turns.stages

def worker_loaded():
    return sorted(m for m in sys.modules if m.split(".")[:2] == ["nekoflow", "worker"]
                  or m.split(".")[0] in ("tasks", "celeryconfig"))

before = worker_loaded()
from nekoflow.taskqueue import task_queue

queue = task_queue()
print(json.dumps({"before": before, "after": worker_loaded(), "queue": type(queue).__name__}))
"""


def test_the_library_reaches_the_worker_only_through_the_task_queue() -> None:
    """Importing every edge that publishes (API, CLIs, platform gateways, notices) loads no
    worker module; asking ``nekoflow.taskqueue`` for the queue loads the Celery app, which
    registered itself."""
    out = json.loads(_run(["-c", LIBRARY_EDGES], REPO).strip().splitlines()[-1])
    assert out["before"] == []
    assert "nekoflow.worker.turns" in out["after"]
    assert out["queue"] == "CeleryTaskQueue"


def test_the_wheel_installs_nekoflow_only() -> None:
    """The packages setuptools builds from pyproject's ``packages.find`` are nekoflow's: no
    top-level ``tasks`` package or ``celeryconfig`` module in site-packages."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    setup = config["setuptools"]
    assert "py-modules" not in setup
    packages = find_packages(where=str(REPO), **setup["packages"]["find"])
    assert "nekoflow.worker" in packages
    assert all(p == "nekoflow" or p.startswith("nekoflow.") for p in packages), packages
