"""``nekoflow runs`` (text) shows a reply whose chunk is recorded ``unknown`` as a partial
delivery with the chunk's reason, as ``--json`` and the API carry it (issue 30): the platform
took chunk 0 but answered after the client's read timeout (the loopback Bot API answers late)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nekoflow.delivery.ratelimit import InMemoryRateLimiter
from nekoflow.delivery.settings import DeliverySettings
from nekoflow.turns.delivery import DeliveryDeps, deliver_turn
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline
from tests.platforms.telegram.conftest import reset_caches, tg_update
from tests.platforms.telegram.fake_botapi import FakeBotApi

REPO = Path(__file__).resolve().parents[3]


def _runs(deps, tmp_path: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    url = deps.engine.url.render_as_string(hide_password=False)
    env.update(COLUMNS="250", NEKOFLOW_DATABASE_URL=url, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-m", "nekoflow", "runs", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_runs_text_shows_the_unknown_chunk_and_its_reason(
    deps, tg_env, fake_tg: FakeBotApi, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("NEKOFLOW_TELEGRAM_TIMEOUT", "0.3")
    reset_caches()
    chat = 8301
    handle = submit_turn(deps, "telegram", tg_update(chat, "你好"), bot="neko")
    assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
    fake_tg.answer_late(str(chat), 1.0)
    dd = DeliveryDeps(
        engine=deps.engine,
        settings=deps.settings,
        delivery=DeliverySettings(rate_limit_enabled=False),
        limiter=InMemoryRateLimiter(),
    )
    assert deliver_turn(dd, handle.turn_id).kind == "done"

    [row] = [json.loads(line) for line in _runs(deps, tmp_path, "--json").splitlines()]
    assert (
        row["delivery_status"] == "sent" and "1 chunk(s) unconfirmed: [0]" in row["delivery_reason"]
    )
    text = _runs(deps, tmp_path)
    head = text.splitlines()[0]
    assert head.startswith(handle.turn_id) and "delivery sent (partial)" in head
    assert "delivery sent: 1 chunk(s) unconfirmed: [0]" in text
    chunk = next(line for line in text.splitlines() if line.strip().startswith("chunk 0 unknown:"))
    assert "ReadTimeout" in chunk and "not re-sent" in chunk
    assert "你好" not in chunk
