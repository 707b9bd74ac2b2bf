"""Fixtures for observability tests: the real-worker fixtures of tests/turns, shared."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _load_turns_conftest() -> Any:
    """tests/turns/conftest.py as a plain module (its Workers helper and fixtures)."""
    spec = importlib.util.spec_from_file_location(
        "_turns_conftest_for_observability", REPO / "tests" / "turns" / "conftest.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_shared = _load_turns_conftest()
Workers = _shared.Workers
wait_for = _shared.wait_for
published = _shared.published
role = _shared.role
deps = _shared.deps
worker_env = _shared.worker_env
workers = _shared.workers
live = _shared.live
