"""docker-compose.yml follows the Compose specification and starts every part of nekoflow.

No Docker engine runs in CI: the file is loaded as YAML and its services, commands, ports,
environment and dependencies are checked against what the code expects.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from nekoflow.settings import Settings

REPO = Path(__file__).resolve().parents[1]
TOP_LEVEL = {"name", "services", "networks", "volumes", "configs", "secrets", "include", "version"}
SERVICE_KEYS = {
    "build",
    "image",
    "command",
    "environment",
    "ports",
    "volumes",
    "depends_on",
    "healthcheck",
    "restart",
    "deploy",
    "env_file",
    "profiles",
}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def _celery(service: dict[str, Any]) -> list[str]:
    command = service.get("command") or []
    assert isinstance(command, list), "commands are exec-form lists"
    return command


def test_top_level_keys_are_compose_spec(compose: dict[str, Any]) -> None:
    for key in compose:
        assert key in TOP_LEVEL or key.startswith("x-"), key
    for name, service in compose["services"].items():
        unknown = set(service) - SERVICE_KEYS
        assert not unknown, f"{name}: {unknown}"
        assert ("build" in service) != ("image" in service), name


def test_every_part_has_a_service(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"redis", "postgres", "api", "beat", "flower"} <= set(services)
    queues: set[str] = set()
    for service in services.values():
        command = _celery(service)
        if command[:4] == ["celery", "-A", "tasks", "worker"]:
            queues.update(command[command.index("-Q") + 1].split(","))
            assert "-E" in command  # task events on, so Flower sees every stage
    assert queues == {"turns", "llm", "outbound", "review", "memory"}
    assert _celery(services["gateway-telegram"]) == ["nekoflow", "gateway", "telegram"]
    assert _celery(services["beat"])[:4] == ["celery", "-A", "tasks", "beat"]
    assert _celery(services["flower"])[:4] == ["celery", "-A", "tasks", "flower"]
    assert _celery(services["api"])[:2] == ["nekoflow", "serve"]


def test_dependencies_exist_and_wait_for_health(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        for dep, cond in (service.get("depends_on") or {}).items():
            assert dep in services, f"{name} depends on unknown {dep}"
            assert cond == {"condition": "service_healthy"}
            assert "healthcheck" in services[dep], dep
    for name in ("api", "beat", "worker-turns", "worker-llm", "worker-outbound", "worker-review"):
        assert set(services[name]["depends_on"]) == {"redis", "postgres"}, name


def test_ports_and_volumes(compose: dict[str, Any]) -> None:
    services = compose["services"]
    published = {}
    for name, service in services.items():
        for port in service.get("ports", []):
            assert re.fullmatch(r"\d+:\d+", port), port
            host = port.split(":")[0]
            assert host not in published, f"{name} and {published.get(host)} publish {host}"
            published[host] = name
    assert published == {
        "6379": "redis",
        "5432": "postgres",
        "8000": "api",
        "5555": "flower",
        "6700": "gateway-onebot",  # NapCat connects to it (reverse WebSocket)
    }
    declared = set(compose.get("volumes") or {})
    for service in services.values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if not source.startswith(("/", ".")):
                assert source in declared, source


def test_environment_is_valid_settings(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name in ("api", "worker-turns", "beat"):
        env = {k: v for k, v in services[name]["environment"].items()}
        assert env["NEKOFLOW_DATABASE_URL"].startswith("postgresql://")
        assert "@postgres:5432/" in env["NEKOFLOW_DATABASE_URL"]
        assert env["NEKOFLOW_BROKER_URL"].startswith("redis://redis:6379")
        values = {
            k.removeprefix("NEKOFLOW_").lower(): v
            for k, v in env.items()
            if "${" not in str(v) and k.startswith("NEKOFLOW_")
        }
        settings = Settings(**values)
        assert settings.uses_redis_cooldowns
    assert "NEKOFLOW_API_TOKEN" in services["api"]["environment"]


def test_dockerfile_installs_what_the_services_run() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    for path in ("pyproject.toml", "celeryconfig.py", "nekoflow", "tasks"):
        assert re.search(rf"COPY .*\b{re.escape(path)}\b", dockerfile), path
    assert "pip install" in dockerfile
