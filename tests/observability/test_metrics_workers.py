"""Metrics scraped from real prefork worker processes (multiprocess mode) through the API's
``GET /metrics``, parsed with prometheus_client's own text parser."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from nekoflow.api.app import create_app
from tasks import enqueue_turn

pytestmark = pytest.mark.slow


def web_event(text: str, session: str) -> dict:
    return {"session_id": session, "message": text, "user_id": "u1", "display_name": "莱姆"}


def scrape(live, monkeypatch, directory: Path) -> dict[str, list]:
    """GET /metrics on an API sharing the workers' multiprocess directory, parsed."""
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(directory))
    app = create_app(live.settings, engine=live.engine, turn_deps=live)
    with TestClient(app) as client:
        response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def total(samples: dict[str, list], name: str, **labels: str) -> float:
    return sum(
        s.value
        for s in samples.get(name, [])
        if all(s.labels.get(k) == v for k, v in labels.items())
    )


def test_done_turns_stages_queue_wait_tokens_and_heartbeat(
    live, workers, tmp_path, monkeypatch
) -> None:
    directory = tmp_path / "prom"
    directory.mkdir()
    workers.start(extra_env={"PROMETHEUS_MULTIPROC_DIR": str(directory)})
    handles = [enqueue_turn("web", web_event("你好呀", f"m{i}")) for i in range(2)]
    for handle in handles:
        handle.wait(timeout=60)
        assert handle.status() == "done", workers.logs()
    samples = scrape(live, monkeypatch, directory)

    assert total(samples, "nekoflow_turns_total", channel="web", status="done") == 2
    for stage in ("dispatch", "before_turn", "llm_call", "memory_build", "review", "apply_deltas"):
        assert total(samples, "nekoflow_stage_duration_seconds_count", stage=stage) >= 2, stage
        assert total(samples, "nekoflow_queue_wait_seconds_count", stage=stage) >= 2, stage
    assert total(samples, "nekoflow_queue_wait_seconds_count", stage="llm_call", queue="llm") >= 2
    assert total(samples, "nekoflow_llm_call_duration_seconds_count", outcome="ok") == 2
    assert total(samples, "nekoflow_llm_tokens_total", kind="reply", type="completion") > 0
    assert total(samples, "nekoflow_llm_tokens_total", kind="reply", type="prompt") > 0
    assert total(samples, "nekoflow_worker_heartbeat_timestamp_seconds") > 1e9
    # Bounded labels: no turn id, scope id or text anywhere in the exposition.
    for values in samples.values():
        for s in values:
            for value in s.labels.values():
                assert not any(h.turn_id in value for h in handles)
                assert "web:" not in value and "你好" not in value


def test_failed_turn_llm_errors_and_retries(live, workers, tmp_path, monkeypatch) -> None:
    directory = tmp_path / "prom"
    directory.mkdir()
    workers.start(
        extra_env={
            "PROMETHEUS_MULTIPROC_DIR": str(directory),
            "NEKOFLOW_LLM_PROVIDER": "openai",
            "NEKOFLOW_LLM_BASE_URL": "http://127.0.0.1:9/v1",  # nothing listens
            "NEKOFLOW_LLM_API_KEY": "unused",
            "NEKOFLOW_LLM_CONNECT_TIMEOUT": "0.5",
            "NEKOFLOW_LLM_MAX_ATTEMPTS": "2",
            "NEKOFLOW_LLM_BACKOFF_BASE": "0",
            "NEKOFLOW_LLM_BACKOFF_MAX": "0",
        }
    )
    handle = enqueue_turn("web", web_event("你还在吗", "f1"))
    handle.wait(timeout=60)
    assert handle.status() == "failed", workers.logs()
    samples = scrape(live, monkeypatch, directory)

    assert total(samples, "nekoflow_turns_total", channel="web", status="failed", reason="") == 1
    assert total(samples, "nekoflow_llm_call_duration_seconds_count", outcome="ok") == 0
    assert total(samples, "nekoflow_llm_call_duration_seconds_count") == 2
    assert total(samples, "nekoflow_task_retries_total", stage="llm_call") >= 1
    assert total(samples, "nekoflow_stage_duration_seconds_count", outcome="retry") >= 1
    assert total(samples, "nekoflow_stage_duration_seconds_count", outcome="failed") >= 1
