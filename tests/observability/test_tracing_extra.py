"""NEKOFLOW_TRACING without the ``otel`` extra: one line naming the install, no crash."""

from __future__ import annotations

import logging
import sys

import pytest

from nekoflow.observability import tracing
from nekoflow.settings import Settings


def test_tracing_without_the_extra_names_the_install(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.resources", None)  # not installed
    monkeypatch.setattr("nekoflow.settings.get_settings", lambda: Settings(tracing="console"))
    monkeypatch.setitem(tracing._state, "pid", None)
    monkeypatch.setitem(tracing._state, "tracer", None)
    with caplog.at_level(logging.ERROR, logger=tracing.log.name):
        assert tracing.tracer() is None
    assert "pip install 'nekoflow[otel]'" in caplog.text
    assert "opentelemetry.sdk.resources is missing" in caplog.text
