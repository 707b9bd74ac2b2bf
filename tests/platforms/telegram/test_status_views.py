"""The delivery status, separate from the turn's, as ``GET /api/turns/{id}``, the SSE stream and
``nekoflow runs`` show it (a blocked chat: the turn is done, its delivery failed with a reason).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from fastapi.testclient import TestClient

from nekoflow.api import create_app
from nekoflow.delivery.settings import DeliverySettings
from nekoflow.turns.delivery import DeliveryDeps, deliver_turn
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline
from tests.api.conftest import read_events
from tests.platforms.telegram.conftest import tg_update
from tests.platforms.telegram.fake_botapi import FakeBotApi

REPO = Path(__file__).resolve().parents[3]


def _dd(deps) -> DeliveryDeps:
    return DeliveryDeps(
        engine=deps.engine,
        settings=deps.settings,
        delivery=DeliverySettings(rate_limit_enabled=False),
    )


def test_api_sse_and_runs_show_delivery(deps, tg_env, fake_tg: FakeBotApi, tmp_path) -> None:
    fake_tg.state.blocked.add("3001")
    blocked = submit_turn(deps, "telegram", tg_update(3001, "你好", user_id=3001), bot="neko")
    ok = submit_turn(deps, "telegram", tg_update(3002, "你好", user_id=3002), bot="neko")
    for h in (blocked, ok):
        run_inline(deps, h.turn_id, sleep=False)
    settings = deps.settings.model_copy(update={"api_public_reads": True})
    app = create_app(settings, engine=deps.engine, turn_deps=deps)
    with TestClient(app) as client:
        before = client.get(f"/api/turns/{ok.turn_id}").json()
        assert (before["status"], before["delivery_status"]) == ("done", "pending")
        # the stream ends with the turn's outcome, then a `delivery` event once it settles
        timer = threading.Timer(0.3, deliver_turn, args=(_dd(deps), ok.turn_id))
        timer.start()
        events = read_events(client, f"/api/turns/{ok.turn_id}/events?timeout=20")
        timer.join()
        assert [name for name, _ in events] == ["done", "delivery"]
        assert events[1][1] == {
            "turn_id": ok.turn_id,
            "delivery_status": "sent",
            "delivery_reason": None,
        }
        assert deliver_turn(_dd(deps), blocked.turn_id).kind == "failed"
        body = client.get(f"/api/turns/{blocked.turn_id}").json()
        assert (body["status"], body["delivery_status"]) == ("done", "failed")
        assert "bot blocked by the user" in body["delivery_reason"]
        assert "你好" not in json.dumps(body["delivery_reason"], ensure_ascii=False)
    if deps.engine.url.get_backend_name() != "sqlite":
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env.update(COLUMNS="250", NEKOFLOW_DATABASE_URL=str(deps.engine.url), PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-m", "nekoflow", "runs"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "delivery" in out.stdout and "failed" in out.stdout and "sent" in out.stdout
    assert f"{blocked.turn_id} delivery failed: chunk 0: telegram sendMessage: error 403" in (
        out.stdout.replace("\n", " ")
    )
    rows = subprocess.run(
        [sys.executable, "-m", "nekoflow", "runs", "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout.splitlines()
    statuses = {json.loads(r)["turn_id"]: json.loads(r)["delivery_status"] for r in rows}
    assert statuses == {blocked.turn_id: "failed", ok.turn_id: "sent"}
