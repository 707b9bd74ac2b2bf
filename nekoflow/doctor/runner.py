"""Runs every ``nekoflow doctor`` check in order (the CLI and ``/healthz?deep=1`` call it)."""

from __future__ import annotations

from typing import Any

from nekoflow.doctor import platforms, probes
from nekoflow.doctor.rules import Check
from nekoflow.settings import Settings, get_settings


def run_checks(settings: Any = None, *, timeout: float = 2.0) -> list[Check]:
    """Settings, database, Redis, broker, queues, beat, leases, model, platform bots."""
    if settings is None:
        try:
            settings = get_settings()
        except Exception as exc:
            return [platforms.settings_error("settings", exc)]
    assert isinstance(settings, Settings)
    checks = [probes.database(settings, timeout)]
    client = probes.redis_client(settings, timeout)
    try:
        checks.append(probes.redis_ping(settings, client))
        redis_ok = checks[-1].ok
        checks.append(probes.broker(settings, timeout))
        if checks[-1].ok and not (settings.broker_url or "").startswith("memory://"):
            checks.extend(probes.consumers(settings, timeout))
        if redis_ok:
            checks.append(probes.beat(settings, client))
        checks.append(probes.leases(settings))
        checks.extend(probes.model(settings))
        checks.extend(platforms.telegram(timeout))
        if redis_ok:
            checks.extend(platforms.onebot(settings, client))
        checks.extend(platforms.qqbot(timeout))
        checks.extend(platforms.feishu(timeout))
    finally:
        client.close()
    return checks
