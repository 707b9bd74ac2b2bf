"""docker-compose runs the OneBot gateway (profile ``onebot``), and the compose defaults of the
``NEKOFLOW_ONEBOT_*`` variables are valid settings (nothing configured: no OneBot bot)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from nekoflow.platforms.onebot.settings import OneBotSettings

REPO = Path(__file__).resolve().parents[3]


def test_compose_has_the_onebot_gateway(monkeypatch: pytest.MonkeyPatch) -> None:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    service = compose["services"]["gateway-onebot"]
    assert service["command"] == ["nekoflow", "gateway", "onebot"]
    assert service["profiles"] == ["onebot"]
    env = service["environment"]
    assert env["NEKOFLOW_ONEBOT_WS_HOST"] == "0.0.0.0"
    assert f"{env['NEKOFLOW_ONEBOT_WS_PORT']}:{env['NEKOFLOW_ONEBOT_WS_PORT']}" in service["ports"]
    for key, value in env.items():
        if key.startswith("NEKOFLOW_ONEBOT_"):
            default = re.fullmatch(r"\$\{[A-Z_]+:-(.*)\}", str(value))
            monkeypatch.setenv(key, default.group(1) if default else str(value))
    settings = OneBotSettings()
    assert settings.bots == [] and settings.ws_port == 6700
