"""Where the real inputs users bring live (``../shared/corpus``, see its SOURCES.md)."""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

_REPO = Path(__file__).resolve().parents[1]


def _find() -> Path:
    """The corpus folder: ``NEKOFLOW_TEST_CORPUS``, the repository's sibling, or /work/shared."""
    env = os.environ.get("NEKOFLOW_TEST_CORPUS")
    candidates = [Path(env)] if env else []
    candidates += [_REPO.parent / "shared" / "corpus", Path("/work/shared/corpus")]
    return next((c for c in candidates if c.is_dir()), candidates[0])


CORPUS = _find()


def corpus_file(name: str) -> Path:
    """The path of corpus file ``name``; the test is skipped when the corpus is not here."""
    path = CORPUS / name
    if not path.is_file():
        pytest.skip(f"corpus file {path} is absent (set NEKOFLOW_TEST_CORPUS)")
    return path


def corpus_event(events: Mapping[str, Any], name: str) -> Any:
    """A deep copy of corpus event ``name`` from ``events`` (keyed ``file:key``); the test is
    skipped only when the corpus is not here: a present corpus missing the event fails."""
    if not CORPUS.is_dir():
        pytest.skip(f"corpus folder {CORPUS} is absent (set NEKOFLOW_TEST_CORPUS)")
    assert name in events, f"corpus event {name} is not in {CORPUS}"
    return copy.deepcopy(events[name])
