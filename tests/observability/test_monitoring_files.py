"""The Grafana dashboard and the alert rules load, and every series they query exists."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from prometheus_client import Counter, Gauge, Histogram

from nekoflow.observability import metrics

MONITORING = Path(__file__).resolve().parents[2] / "monitoring"
SERIES = re.compile(r"\bnekoflow_[a-z_]+\b")


def exported_series() -> set[str]:
    """Every sample name the metrics module can expose."""
    names: set[str] = set()
    for obj in vars(metrics).values():
        if isinstance(obj, Histogram):
            names |= {f"{obj._name}_{s}" for s in ("bucket", "count", "sum")}
        elif isinstance(obj, Counter):
            names.add(f"{obj._name}_total")
        elif isinstance(obj, Gauge):
            names.add(obj._name)
    return names


def test_dashboard_loads_and_queries_only_exported_series() -> None:
    dashboard = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    assert dashboard["uid"] and dashboard["panels"]
    exported = exported_series()
    used: set[str] = set()
    for panel in dashboard["panels"]:
        assert panel["title"] and panel["targets"], panel
        for target in panel["targets"]:
            used |= set(SERIES.findall(target["expr"]))
    assert used and used <= exported, used - exported
    # The panels: turns, stage latency, queue wait, LLM latency, tokens, cost,
    # deliveries, sweeper.
    for series in (
        "nekoflow_turns_total",
        "nekoflow_stage_duration_seconds_bucket",
        "nekoflow_queue_wait_seconds_bucket",
        "nekoflow_llm_call_duration_seconds_bucket",
        "nekoflow_llm_tokens_total",
        "nekoflow_llm_cost_total",
        "nekoflow_deliveries_total",
        "nekoflow_sweeper_republished_total",
    ):
        assert series in used, series


def test_alert_rules_load_and_cover_workers_failures_and_queue_wait() -> None:
    rules = yaml.safe_load((MONITORING / "alerts.yml").read_text())
    alerts = {r["alert"]: r for g in rules["groups"] for r in g["rules"]}
    assert set(alerts) == {
        "NekoflowNoWorkerOnline",
        "NekoflowTurnFailureRatio",
        "NekoflowQueueWaitHigh",
    }
    exported = exported_series()
    for rule in alerts.values():
        assert rule["annotations"]["summary"] and rule["labels"]["severity"]
        used = set(SERIES.findall(rule["expr"]))
        assert used and used <= exported, (rule["alert"], used - exported)
