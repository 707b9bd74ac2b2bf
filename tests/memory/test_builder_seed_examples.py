"""The seed's two worked examples (seed 002), literally: they are the builder's acceptance tests.

Example 1's 【开兴】 is corrected to 【开心】 as SPEC says.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nekoflow.memory import build_memory
from tests.seed_data import SEED_EXAMPLE_1, SEED_EXAMPLE_2, SEED_MEMORY_1, SEED_MEMORY_2

EXAMPLE_1_LINES = SEED_EXAMPLE_1
EXAMPLE_1_MEMORY = SEED_MEMORY_1
EXAMPLE_2_LINES = SEED_EXAMPLE_2
EXAMPLE_2_MEMORY = SEED_MEMORY_2


def _as_objects(lines: list[dict]) -> list[SimpleNamespace]:
    """The same lines as attribute objects (like ``Line`` rows), every seed field present."""
    fields = [
        "attribute",
        "content",
        "original_emotion",
        "predicted_emotion",
        "tts_content",
        "action_content",
        "audio_file",
        "role_id",
        "script_role_id",
        "display_name",
    ]
    return [SimpleNamespace(**{f: line.get(f) for f in fields}) for line in lines]


@pytest.mark.parametrize("as_objects", [False, True], ids=["dicts", "objects"])
def test_example_1_one_to_one(as_objects: bool) -> None:
    lines = _as_objects(EXAMPLE_1_LINES) if as_objects else EXAMPLE_1_LINES
    assert build_memory(lines) == EXAMPLE_1_MEMORY


def test_example_1_with_the_characters_display_name() -> None:
    assert build_memory(EXAMPLE_1_LINES, display_name="钦灵") == EXAMPLE_1_MEMORY


@pytest.mark.parametrize("as_objects", [False, True], ids=["dicts", "objects"])
def test_example_2_multi_character_for_role_id_1(as_objects: bool) -> None:
    lines = _as_objects(EXAMPLE_2_LINES) if as_objects else EXAMPLE_2_LINES
    assert build_memory(lines, role_id=1) == EXAMPLE_2_MEMORY


def test_example_2_role_id_given_as_text() -> None:
    assert build_memory(EXAMPLE_2_LINES, role_id="1") == EXAMPLE_2_MEMORY
