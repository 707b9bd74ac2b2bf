"""``nekoflow gateway onebot`` refuses bad or missing settings with a line naming the variable."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from nekoflow.cli import app


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "no reverse-WebSocket bot"),
        ({"NEKOFLOW_ONEBOT_BOTS": "not json"}, "NEKOFLOW_ONEBOT_BOTS cannot be parsed"),
        ({"NEKOFLOW_ONEBOT_BOTS": '[{"self_id": "abc"}]'}, "NEKOFLOW_ONEBOT_BOTS: [0].self_id"),
        ({"NEKOFLOW_ONEBOT_WS_PORT": "70000"}, "NEKOFLOW_ONEBOT_WS_PORT"),
    ],
)
def test_bad_settings_exit_2_naming_the_variable(
    env: dict[str, str], expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("NEKOFLOW_ONEBOT_SELF_ID", "NEKOFLOW_ONEBOT_BOTS"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = CliRunner().invoke(app, ["gateway", "onebot"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert expected in " ".join(result.output.split())
