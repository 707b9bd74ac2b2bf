"""Delivery results and sweeper re-publications, counted by the Celery middleware in real worker
processes (a Telegram reply sent to the loopback Bot API; a stuck turn re-published by the beat
task), scraped through the API's ``GET /metrics`` in multiprocess mode."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlmodel import Session

import tests.platforms.telegram.conftest as telegram
from nekoflow.api import create_app
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.turns import TurnRun
from tests.turns.conftest import wait_for

fake_tg = telegram.fake_tg  # the loopback Bot API and its settings (fixtures)
tg_env = telegram.tg_env

pytestmark = pytest.mark.slow


def samples(live, monkeypatch, directory: Path) -> list:
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(directory))
    with TestClient(create_app(live.settings, engine=live.engine, turn_deps=live)) as client:
        text = client.get("/metrics").text
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def total(all_samples: list, name: str, **labels: str) -> float:
    return sum(
        s.value
        for s in all_samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def test_a_sent_reply_counts_as_a_done_delivery(
    live, workers, tg_env, fake_tg, tmp_path, monkeypatch
) -> None:
    directory = tmp_path / "prom"
    workers.start(extra_env={**tg_env, "PROMETHEUS_MULTIPROC_DIR": str(directory)})
    app = create_app(live.settings, engine=live.engine, turn_deps=live)
    with TestClient(app) as client:
        headers = {"X-Telegram-Bot-Api-Secret-Token": telegram.SECRET}
        update = telegram.tg_update(4242, "你好")
        answer = client.post("/webhooks/telegram/neko", json=update, headers=headers)
        assert answer.status_code == 200, answer.text
        turn_id = answer.json()["turn_id"]

    def sent() -> bool:
        with Session(live.engine) as s:
            return s.get(TurnRun, turn_id).delivery_status == "sent"

    wait_for(sent, 60, "the reply to be sent", workers.logs)
    wait_for(
        lambda: total(samples(live, monkeypatch, directory), "nekoflow_deliveries_total") >= 1,
        30,
        "the deliver task's metrics",
        workers.logs,
    )
    found = samples(live, monkeypatch, directory)
    assert total(found, "nekoflow_deliveries_total", result="done") >= 1
    assert total(found, "nekoflow_turns_total", channel="telegram", status="done") == 1
    assert total(found, "nekoflow_queue_wait_seconds_count", stage="deliver", queue="outbound") >= 1


def test_the_sweeper_counts_what_it_republishes(live, workers, tmp_path, monkeypatch) -> None:
    from tasks.turns import sweep

    old = utcnow() - timedelta(hours=1)
    with Session(live.engine) as s:
        s.add(
            TurnRun(
                turn_id="stuck-for-metrics",
                channel="web",
                scope_id="web:conversation:stuck",
                seq=1,
                status="queued",
                publishes=0,
                created_at=old,
                updated_at=old,
            )
        )
        s.commit()
    directory = tmp_path / "prom"
    workers.start(extra_env={"PROMETHEUS_MULTIPROC_DIR": str(directory)})
    sweep.apply_async()
    wait_for(
        lambda: (
            total(samples(live, monkeypatch, directory), "nekoflow_sweeper_republished_total") >= 1
        ),
        60,
        "the sweeper's re-publication to be counted",
        workers.logs,
    )
    found = samples(live, monkeypatch, directory)
    assert total(found, "nekoflow_stage_duration_seconds_count", stage="sweep", outcome="ok") >= 1
