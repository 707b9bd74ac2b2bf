"""Fixtures for the channel tests: real-looking platform events stored as JSON files."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

EVENTS = Path(__file__).parent / "events"


@pytest.fixture
def event() -> Callable[[str], dict[str, Any]]:
    """Load ``events/<name>.json`` as a fresh dict (tests may mutate it)."""

    def load(name: str) -> dict[str, Any]:
        return copy.deepcopy(json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8")))

    return load
