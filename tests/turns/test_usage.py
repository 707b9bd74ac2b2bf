"""Usage, quotas and cost: every paid call counted once, the report equals what servers said."""

from __future__ import annotations

import json
from datetime import date

import pytest
from sqlmodel import Session, select

from nekoflow.flow.policy import FlowConfig, FlowPolicy
from nekoflow.prices import Price, cost
from nekoflow.storage.usage import LLMUsage
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline
from nekoflow.usage.meter import MeteredChatModel, UsageEntry, metered
from nekoflow.usage.store import today, usage_report
from tasks import enqueue_turn

from .llm_server import FakeLLM, completion


def event(text: str, session: str = "u1") -> dict:
    return {"session_id": session, "message": text, "user_id": "u1", "display_name": "莱姆"}


def test_cost_uses_the_exact_name_then_the_longest_prefix() -> None:
    prices = {
        "gpt-4o": Price(prompt=2.5, completion=10),
        "gpt-4o-mini": Price(prompt=0.15, completion=0.6),
    }
    assert cost(prices, "gpt-4o-mini-2024-07-18", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert cost(prices, "gpt-4o", 1000, 0) == pytest.approx(0.0025)
    assert cost(prices, "claude", 1, 1) is None


def test_the_meter_counts_only_inside_its_block() -> None:
    from nekoflow.llm import ScriptedChatModel

    model = MeteredChatModel(ScriptedChatModel())
    model.complete([{"role": "user", "content": "hi"}])  # no meter open: nothing recorded
    with metered() as calls:
        result = model.complete([{"role": "user", "content": "你好"}])
    assert calls == [
        UsageEntry(result.model or "scripted", result.prompt_tokens, result.completion_tokens)
    ]


def test_each_turn_records_its_reply_usage_once_and_a_quota_skips(deps) -> None:
    first = submit_turn(deps, "web", event("你好"))
    assert run_inline(deps, first.turn_id, sleep=False) == "ok"
    assert run_inline(deps, first.turn_id, sleep=False) in ("ok", "stop")  # a redelivery
    with Session(deps.engine) as s:
        rows = s.exec(select(LLMUsage)).all()
    run = first.run()
    assert [(r.kind, r.prompt_tokens, r.completion_tokens) for r in rows] == [
        ("reply", run.prompt_tokens, run.completion_tokens)
    ]
    assert rows[0].scope_id == run.scope_id and rows[0].user_id == "u1"
    deps.flow = FlowConfig(default=FlowPolicy(daily_tokens_user=1))
    second = submit_turn(deps, "web", event("还在吗"))
    assert run_inline(deps, second.turn_id, sleep=False) == "stop"
    assert second.status() == "skipped" and second.reason == "quota_exceeded"
    other = submit_turn(deps, "web", event("我是别人", session="u2") | {"user_id": "u9"})
    assert run_inline(deps, other.turn_id, sleep=False) == "ok"


@pytest.mark.slow
def test_the_usage_report_equals_what_the_llm_server_reported(live, workers, tmp_path) -> None:
    reported: list[tuple[int, int]] = []

    def script(body, n):
        usage = (100 + n, 10 + n)
        reported.append(usage)
        body = completion("【开心】好呀。")
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
        return 200, body, {}, 0.0

    with FakeLLM(script) as llm:
        workers.start(extra_env=llm.env(NEKOFLOW_REVIEW_MODE="llm"))
        handles = [enqueue_turn("web", event(f"第{i}句", session=f"s{i}")) for i in range(3)]
        for h in handles:
            assert h.wait(timeout=60) and h.status() == "done", workers.logs()
    assert len(reported) == 6  # a reply and an LLM review per turn
    rows = usage_report(
        live.engine, by="kind", prices={"fake-model": Price(prompt=1.0, completion=2.0)}
    )
    by_kind = {r["kind"]: r for r in rows}
    assert by_kind["reply"]["calls"] == 3 and by_kind["review"]["calls"] == 3
    assert sum(r["prompt_tokens"] for r in rows) == sum(p for p, _ in reported)
    assert sum(r["completion_tokens"] for r in rows) == sum(c for _, c in reported)
    expected = sum(p * 1.0 + c * 2.0 for p, c in reported) / 1_000_000
    assert sum(r["cost"] for r in rows) == pytest.approx(expected)
    day = usage_report(live.engine, by="day", since=date.today())
    assert day and day[0]["total_tokens"] == sum(p + c for p, c in reported)
    json.dumps(rows)


def test_quota_counters_grow_only_once_the_day_is_rebuilt_from_sql(redis_client) -> None:
    from nekoflow.usage.quota_redis import QuotaCounters

    c = QuotaCounters(redis_client, prefix="nftest-quota")
    redis_client.delete(*redis_client.keys("nftest-quota:*") or ["x"])
    dims = [("user", "u1"), ("scope", "s1")]
    assert c.get("2026-01-01", dims) == [None, None]  # not complete: the caller reads SQL
    c.add("2026-01-01", dims, 50)  # no counter yet: nothing is started from a partial sum
    assert c.get("2026-01-01", dims) == [None, None]
    redis_client.set(c.key("2026-01-01", "user", "u1"), 100)  # another process's rebuild won
    c.rebuild("2026-01-01", {("user", "u1"): 999, ("user", "u2"): 30})
    assert c.get("2026-01-01", dims) == [100, 0]  # complete: a missing counter is zero
    c.add("2026-01-01", dims, 7)
    assert c.get("2026-01-01", [*dims, ("user", "u2")]) == [107, 7, 30]
    assert redis_client.ttl(c.key("2026-01-01", "scope", "s1")) > 0
    assert redis_client.ttl(c.marker("2026-01-01")) > 0
    assert c.get("2026-01-02", dims) == [None, None]  # each day is rebuilt on its own


def test_a_lost_redis_is_rebuilt_from_the_usage_record(deps, redis_client) -> None:
    from nekoflow.usage.quota_redis import QuotaCounters

    deps.quota_counters = QuotaCounters(redis_client, prefix="nftest-q3")
    deps.flow = FlowConfig(default=FlowPolicy(daily_tokens_user=10_000_000))
    first = submit_turn(deps, "web", event("一"))
    assert run_inline(deps, first.turn_id, sleep=False) == "ok"
    run = first.run()
    used = run.prompt_tokens + run.completion_tokens
    redis_client.delete(*redis_client.keys("nftest-q3:*"))  # Redis restarted, nothing kept
    deps.flow = FlowConfig(default=FlowPolicy(daily_tokens_user=used))
    second = submit_turn(deps, "web", event("二"))
    assert run_inline(deps, second.turn_id, sleep=False) == "stop"
    assert second.reason == "quota_exceeded"
    assert deps.quota_counters.get(today(), [("user", "u1")]) == [used]


def test_a_quota_is_checked_against_the_redis_counters(deps, redis_client) -> None:
    from nekoflow.usage.quota_redis import QuotaCounters

    deps.quota_counters = QuotaCounters(redis_client, prefix="nftest-q2")
    redis_client.delete(*redis_client.keys("nftest-q2:*") or ["x"])
    deps.flow = FlowConfig(default=FlowPolicy(daily_tokens_user=1))
    first = submit_turn(deps, "web", event("一"))
    assert run_inline(deps, first.turn_id, sleep=False) == "ok"  # seeds 0, then adds its tokens
    run = first.run()
    [counted] = deps.quota_counters.get(today(), [("user", "u1")])
    assert counted == run.prompt_tokens + run.completion_tokens
    second = submit_turn(deps, "web", event("二"))
    assert run_inline(deps, second.turn_id, sleep=False) == "stop"
    assert second.reason == "quota_exceeded"


def test_over_quota_a_configured_fallback_model_answers(deps) -> None:
    first = submit_turn(deps, "web", event("你好"))
    assert run_inline(deps, first.turn_id, sleep=False) == "ok"
    deps.flow = FlowConfig(
        default=FlowPolicy(daily_tokens_user=1, quota_fallback_model="cheap-model")
    )
    second = submit_turn(deps, "web", event("再聊聊"))
    assert run_inline(deps, second.turn_id, sleep=False) == "ok"
    assert second.status() == "done" and second.run().llm_model == "cheap-model"
    with Session(deps.engine) as s:
        models = s.exec(select(LLMUsage.model).where(LLMUsage.turn_id == second.turn_id)).all()
    assert models == ["cheap-model"]
