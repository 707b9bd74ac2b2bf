"""Conversation flow under faults and concurrency: real workers SIGKILLed at every stage while
messages are merged and interrupt running turns; two enqueuer processes merging into one scope."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
import redis
from sqlmodel import Session, col, select

from nekoflow.flow.policy import FlowConfig, FlowPolicy, OnBusy
from nekoflow.storage.dialogue import Line
from nekoflow.storage.turns import FINISHED, STAGES, DeltaLedger, TurnRun
from tasks import enqueue_turn
from tests.conftest import production_db_only

from .conftest import REPO, wait_for

pytestmark = pytest.mark.slow


def event(text: str, session: str) -> dict:
    return {
        "session_id": session,
        "message": text,
        "user_id": f"u-{session}",
        "display_name": "莱姆",
        "message_id": text,
    }


def check_every_message_once(engine, texts: list[str], scopes: set[str]) -> list[TurnRun]:
    """All turns of the scopes finished; every message is a user line exactly once; deltas only
    for done turns, once each; nothing both superseded and applied."""
    with Session(engine) as s:
        runs = s.exec(select(TurnRun).where(col(TurnRun.scope_id).in_(scopes))).all()
        assert all(r.status in FINISHED for r in runs), [(r.seq, r.status) for r in runs]
        ids = [r.turn_id for r in runs]
        lines = s.exec(
            select(Line.content).where(col(Line.turn_id).in_(ids), Line.attribute == "user")
        ).all()
        ledger = set(s.exec(select(DeltaLedger.turn_id).where(col(DeltaLedger.turn_id).in_(ids))))
    assert sorted(lines) == sorted(texts), "each message written once, none lost"
    assert ledger == {r.turn_id for r in runs if r.status == "done"}
    return list(runs)


@production_db_only
def test_sigkill_at_every_stage_during_merge_and_interrupt(
    live, workers, redis_client: redis.Redis, tmp_path
) -> None:
    config = tmp_path / "flow.ini"
    config.write_text("[conversation_flow_web]\non_busy = interrupt\n", encoding="utf-8")
    live.flow = FlowConfig(channels={"web": FlowPolicy(on_busy=OnBusy.interrupt)})
    crash_env = {
        "NEKOFLOW_BROKER_VISIBILITY_TIMEOUT": "2",
        "NEKOFLOW_TURN_LEASE_SECONDS": "4",
        "NEKOFLOW_LLM_TIMEOUT": "3",
        "NEKOFLOW_SWEEP_INTERVAL_SECONDS": "1",
        "NEKOFLOW_RUNTIME_CONFIG_PATH": str(config),
    }
    points = [f"crash:{p}:{stage}" for stage in STAGES for p in ("before", "after")]
    for key in points:
        redis_client.set(key, 1)
    start = dict(app="tests.turns.crash_app", concurrency=1, beat=True, extra_env=crash_env)
    proc = workers.start(name="c0", **start)
    texts = [f"打断{i:02d}" for i in range(24)]
    scopes = {"web:conversation:i1", "web:conversation:i2"}
    restarts = 0
    deadline = time.monotonic() + 240
    for i, text in enumerate(texts):
        enqueue_turn("web", event(text, "i1" if i % 2 else "i2"))
        time.sleep(0.15)
        if proc.poll() is not None:
            restarts += 1
            proc = workers.start(name=f"c{restarts}", **start)

    def finished() -> bool:
        nonlocal proc, restarts
        if proc.poll() is not None:
            restarts += 1
            proc = workers.start(name=f"c{restarts}", **start)
        with Session(live.engine) as s:
            runs = s.exec(select(TurnRun).where(col(TurnRun.scope_id).in_(scopes))).all()
        return bool(runs) and all(r.status in FINISHED for r in runs)

    while not finished():
        assert time.monotonic() < deadline, f"turns did not finish\n{workers.logs()}"
        time.sleep(0.3)
    runs = check_every_message_once(live.engine, texts, scopes)
    statuses = {r.status for r in runs}
    assert "superseded" in statuses and "done" in statuses, statuses
    assert restarts >= 1


def test_two_enqueuer_processes_merge_into_one_scope(live, workers, worker_env, tmp_path) -> None:
    live.flow = FlowConfig(
        default=FlowPolicy(on_busy=OnBusy.merge, debounce_seconds=1.0, debounce_max_seconds=4)
    )
    config = tmp_path / "merge.ini"
    config.write_text(
        "[conversation_flow]\non_busy = merge\ndebounce_seconds = 1.0\ndebounce_max_seconds = 4\n",
        encoding="utf-8",
    )
    env = {**worker_env, "NEKOFLOW_RUNTIME_CONFIG_PATH": str(config)}
    other = [f"进程B{i:02d}" for i in range(25)]
    script = (
        "import json, sys\n"
        "from tasks import enqueue_turn\n"
        "for text in json.loads(sys.argv[1]):\n"
        "    ev = {'session_id': 'two', 'message': text, 'user_id': 'u-two',\n"
        "          'display_name': 'B', 'message_id': text}\n"
        "    enqueue_turn('web', ev)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, json.dumps(other, ensure_ascii=False)], cwd=REPO, env=env
    )
    mine = [f"进程A{i:02d}" for i in range(25)]
    for text in mine:
        enqueue_turn("web", event(text, "two"))
    assert child.wait(timeout=120) == 0
    workers.start(concurrency=2, name="m0", extra_env={"NEKOFLOW_RUNTIME_CONFIG_PATH": str(config)})
    scopes = {"web:conversation:two"}

    def done() -> bool:
        with Session(live.engine) as s:
            runs = s.exec(select(TurnRun).where(col(TurnRun.scope_id).in_(scopes))).all()
        return bool(runs) and all(r.status in FINISHED for r in runs)

    wait_for(done, 120, "the merged turns", workers.logs)
    runs = check_every_message_once(live.engine, mine + other, scopes)
    assert len(runs) < len(mine + other), "the two processes' messages were merged"
    assert all(r.status == "done" for r in runs)
