"""A running process follows config.ini: a channel disabled since start-up stops taking turns;
a broken file keeps the last good configuration (issue 15)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nekoflow.channels import CharacterRuntimeContextDispatcher, load_runtime_config
from nekoflow.turns import config_watch
from nekoflow.turns.enqueue import submit_turn

REPO = Path(__file__).resolve().parents[2]
EVENT = json.loads((REPO / "examples" / "events" / "qq.json").read_text(encoding="utf-8"))


def event(n: int) -> dict:
    return {**EVENT, "message_id": 9000 + n}


def test_disabling_a_channel_takes_effect_without_a_restart(deps, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(config_watch, "CHECK_SECONDS", 0.0)
    config = tmp_path / "config.ini"
    config.write_text("[character_runtime_qq]\nenabled = true\n", encoding="utf-8")
    deps.settings = deps.settings.model_copy(update={"runtime_config_path": str(config)})
    deps.dispatcher = CharacterRuntimeContextDispatcher(load_runtime_config(config))

    assert submit_turn(deps, "qq", event(1)).status() == "queued"
    config.write_text("[character_runtime_qq]\nenabled = false\n", encoding="utf-8")
    skipped = submit_turn(deps, "qq", event(2))
    assert skipped.status() == "skipped" and skipped.reason == "disabled"

    config.write_text("[character_runtime_qq]\ntrigger = whenever-you-like\n", encoding="utf-8")
    again = submit_turn(deps, "qq", event(3))  # broken: the last good file stays in force
    assert again.status() == "skipped" and again.reason == "disabled"
    assert config_watch.check_config(str(config)) is not None

    config.write_text("[character_runtime_qq]\nenabled = true\n\n", encoding="utf-8")
    assert submit_turn(deps, "qq", event(4)).status() == "queued"


@pytest.mark.parametrize(
    "text",
    [
        "[conversation_flow]\non_busy = sometimes\n",
        "[proactive]\nquiet_hours = late\n",
        "not an ini",
    ],
)
def test_check_config_names_what_is_wrong(tmp_path, text: str) -> None:
    path = tmp_path / "config.ini"
    path.write_text(text, encoding="utf-8")
    error = config_watch.check_config(str(path))
    assert error
    assert config_watch.check_config(str(tmp_path / "absent.ini")) is None


def test_proactive_settings_follow_the_file(deps, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(config_watch, "CHECK_SECONDS", 0.0)
    config = tmp_path / "config.ini"
    config.write_text("[character_runtime_qq]\nenabled = true\n", encoding="utf-8")
    deps.settings = deps.settings.model_copy(update={"runtime_config_path": str(config)})
    assert config_watch.refresh(deps) is False  # first look: as built
    config.write_text("[proactive_qq]\nfollow_up_after = 6h\n", encoding="utf-8")
    assert config_watch.refresh(deps, force=True)
    assert deps.proactive.for_scope("qq").follow_up_after == 6 * 3600
