"""The metrics observer and label rules in process (the real-worker tests scrape the rest)."""

from __future__ import annotations

import os

from prometheus_client import REGISTRY

from nekoflow.observability import hooks, metrics
from nekoflow.observability.worker import stage_of
from nekoflow.prices import Price
from nekoflow.turns.enqueue import submit_turn


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_skip_reasons_are_short_codes_and_failures_carry_none() -> None:
    assert metrics.reason_label("skipped", "rate_limited") == "rate_limited"
    assert metrics.reason_label("skipped", "not a chat message") == "not_a_chat_message"
    assert metrics.reason_label("skipped", "user 123456 said 你好") == "other"
    assert metrics.reason_label("failed", "LLM call failed after 6 attempt(s)") == ""
    assert metrics.reason_label("done", None) == ""


def test_stage_labels_only_for_nekoflow_tasks() -> None:
    assert stage_of("nekoflow.turn.llm_call") == "llm_call"
    assert stage_of("nekoflow.sweep") == "sweep"
    assert stage_of("nekoflow.rereview.batch") == "rereview.batch"
    assert stage_of("celery.chord_unlock") is None


def test_enqueue_skips_are_counted_by_channel_and_reason(deps) -> None:
    metrics.install()
    labels = {"channel": "qq", "status": "skipped", "reason": "not_a_chat_message"}
    before = value("nekoflow_turns_total", **labels)
    meta = {"post_type": "meta_event", "meta_event_type": "heartbeat", "self_id": 1, "time": 1}
    handle = submit_turn(deps, "qq", meta)
    assert handle.status() == "skipped"
    assert value("nekoflow_turns_total", **labels) == before + 1


def test_usage_counts_tokens_and_priced_cost() -> None:
    observer = metrics.install({"gpt-x": Price(prompt=1.0, completion=2.0)})
    try:
        before = value("nekoflow_llm_cost_total", model="gpt-x-2024", kind="review")
        prompt = {"model": "gpt-x-2024", "kind": "review", "type": "prompt"}
        tokens = value("nekoflow_llm_tokens_total", **prompt)
        hooks.usage("review", [("gpt-x-2024", 1_000_000, 500_000), ("unpriced", 10, 10)])
        after = value("nekoflow_llm_cost_total", model="gpt-x-2024", kind="review")
        assert after - before == 2.0
        assert value("nekoflow_llm_cost_total", model="unpriced", kind="review") == 0.0
        assert value("nekoflow_llm_tokens_total", **prompt) == tokens + 1_000_000
    finally:
        observer.prices = {}


def test_a_broken_observer_never_breaks_the_caller() -> None:
    class Broken:
        def turn_ended(self, *args: object) -> None:
            raise RuntimeError("boom")

    broken = Broken()
    hooks.register(broken)
    try:
        hooks.turn_ended("web", "done")
    finally:
        hooks.unregister(broken)


def test_a_broken_observer_is_logged_by_class_never_by_its_message(caplog) -> None:
    class Quoting:
        def turn_ended(self, *args: object) -> None:
            raise ValueError("upstream failed on input: 我的秘密是草莓 sk-secret-token")

    quoting = Quoting()
    hooks.register(quoting)
    try:
        with caplog.at_level("WARNING", logger="nekoflow.observability.hooks"):
            hooks.turn_ended("web", "done")
    finally:
        hooks.unregister(quoting)
    assert "observer Quoting.turn_ended failed (ValueError)" in caplog.text
    assert "草莓" not in caplog.text and "sk-secret" not in caplog.text


def test_turn_view_reads_memory_refs_when_the_prompt_stage_records_them() -> None:
    from nekoflow.observability.turn_view import _memories

    assert _memories({"memories": 2}) == ([], 2)
    refs = {"memories": 1, "memory_refs": [{"id": 7, "title": "约定看星星"}]}
    assert _memories(refs) == ([{"id": "7", "name": "约定看星星"}], 1)
    assert _memories({"memories": 1, "memory_ids": [3]}) == ([{"id": "3", "name": ""}], 1)


def test_superseded_failed_and_done_turns_are_counted(deps) -> None:
    from nekoflow.flow.policy import FlowConfig, FlowPolicy, OnBusy
    from nekoflow.turns.runner import execute_stage, run_inline

    metrics.install()
    deps.flow = FlowConfig(default=FlowPolicy(on_busy=OnBusy.interrupt))

    def turns(status: str, reason: str = "") -> float:
        return value("nekoflow_turns_total", channel="web", status=status, reason=reason)

    before = {s: turns(s) for s in ("superseded", "done")}
    event = {"session_id": "sup", "user_id": "u1", "message": "讲个故事"}
    old = submit_turn(deps, "web", event)
    assert execute_stage(deps, "dispatch", old.turn_id).kind == "ok"
    new = submit_turn(deps, "web", {**event, "message": "算了"})
    assert old.status() == "superseded"
    assert run_inline(deps, new.turn_id, sleep=False) == "ok"
    assert turns("superseded") == before["superseded"] + 1
    assert turns("done") == before["done"] + 1


def test_a_scrape_skips_a_multiprocess_file_a_process_is_still_creating(tmp_path) -> None:
    """A worker starting creates its ``.db`` file empty, then sizes it: a scrape in between read
    0 bytes and failed (struct.error) — the whole /metrics answer with it. Now such a file is
    left out until it holds its header; the others are still aggregated."""
    import subprocess
    import sys

    from nekoflow.observability.metrics import multiprocess_registry

    code = (
        "from prometheus_client import Counter\nCounter('nekoflow_probe_total', 'probe').inc(3)\n"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)},
    )
    (tmp_path / "counter_99999.db").write_bytes(b"")  # a process mid-start
    from prometheus_client import generate_latest

    text = generate_latest(multiprocess_registry(str(tmp_path))).decode()
    assert "nekoflow_probe_total 3.0" in text
