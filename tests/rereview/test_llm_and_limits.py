"""LLM-mode re-review against a loopback OpenAI-compatible server (per-turn fallback recorded),
the rate limiters, and the purity of the core."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from pytest_httpserver import HTTPServer
from sqlmodel import Session, col, select
from typer.testing import CliRunner
from werkzeug import Request, Response

from nekoflow.cli import app
from nekoflow.rereview import reviewer_version
from nekoflow.rereview.ratelimit import IntervalLimiter
from nekoflow.rereview.ratelimit_redis import RedisRateLimiter
from nekoflow.review.rules import ReviewKeywords
from nekoflow.settings import get_settings
from nekoflow.storage.rereview import ReviewRecord
from tests.rereview.conftest import Convo, build_history

GOOD = {
    "should_write_memory": False,
    "relationship_delta": {"affection": 2, "trust": 1, "familiarity": 1, "reason": "llm"},
    "scores": {"character_fidelity": 0.9, "immersion": 0.8, "memory_value": 0.1},
    "skipped": False,
}


def _completion(content: str) -> dict:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "loopback-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _handler(request: Request) -> Response:
    body = json.loads(request.get_data())
    last = body["messages"][-1]["content"]
    content = "这不是JSON" if "坏掉" in last else json.dumps(GOOD)
    return Response(json.dumps(_completion(content)), content_type="application/json")


def test_llm_mode_with_fallback_per_turn(
    engine, cli_env, role_id, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_handler(_handler)
    monkeypatch.setenv("NEKOFLOW_LLM_PROVIDER", "openai")
    monkeypatch.setenv("NEKOFLOW_LLM_BASE_URL", httpserver.url_for("/v1"))
    monkeypatch.setenv("NEKOFLOW_LLM_MODEL", "loopback-model")
    monkeypatch.setenv("NEKOFLOW_LLM_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("NEKOFLOW_REREVIEW_LLM_RATE_PER_SECOND", "1000")
    get_settings.cache_clear()
    build_history(engine, role_id, scopes=1, turns=3)
    c = Convo(engine, role_id, "web:user:broken")
    c.turn("你好", "喵")
    c.turn("这句话坏掉了", "呜")
    res = CliRunner().invoke(app, ["rereview", "--inline", "--mode", "llm", "--apply"])
    assert res.exit_code == 0, res.output
    assert "LLM fallbacks to rules" in res.output
    with Session(engine) as s:
        recs = s.exec(
            select(ReviewRecord).order_by(col(ReviewRecord.save_id), col(ReviewRecord.seq))
        ).all()
    assert len(recs) == 5
    assert all(r.reviewer_version.startswith("llm-") for r in recs)
    fell_back = [r for r in recs if r.fallback_reason]
    assert len(fell_back) == 1 and fell_back[0].source == "rule"
    assert fell_back[0].output["fallback_reason"] == fell_back[0].fallback_reason
    good = [r for r in recs if not r.fallback_reason]
    assert all(r.source == "llm" and r.affection == 2 for r in good)
    assert len(httpserver.log) == 5


def test_reviewer_version_changes_with_rules_and_model() -> None:
    base = reviewer_version("rule")
    assert base == reviewer_version("rule") and base.startswith("rule-")
    assert reviewer_version("rule", ReviewKeywords(trust="谢谢")) != base
    assert reviewer_version("llm", model="a") != reviewer_version("llm", model="b")


def test_interval_limiter_spaces_calls() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(d: float) -> None:
        slept.append(d)

    lim = IntervalLimiter(4, clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        lim.acquire()
    assert slept == [0.25, 0.5]
    with pytest.raises(ValueError):
        IntervalLimiter(0)


def test_redis_limiter_shares_a_budget(redis_client) -> None:
    now = [1000.0]

    def sleep(d: float) -> None:
        now[0] += d

    a = RedisRateLimiter(redis_client, "nftest:rr", 2, clock=lambda: now[0], sleep=sleep)
    b = RedisRateLimiter(redis_client, "nftest:rr", 2, clock=lambda: now[0], sleep=sleep)
    a.acquire()
    b.acquire()
    assert now[0] == 1000.0
    a.acquire()  # third call in the window waits for the next one
    assert now[0] == pytest.approx(1001.0)


def test_core_imports_no_celery_redis_or_sql() -> None:
    script = (
        "import sys, nekoflow.rereview, nekoflow.rereview.ratelimit\n"
        "print(','.join(m for m in ('celery','redis','sqlalchemy','sqlmodel','psycopg','kombu')"
        " if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""
