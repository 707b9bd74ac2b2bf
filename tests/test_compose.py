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
        if command[:4] == ["celery", "-A", "nekoflow.worker", "worker"]:
            queues.update(command[command.index("-Q") + 1].split(","))
            assert "-E" in command  # task events on, so Flower sees every stage
    assert queues == {"turns", "llm", "outbound", "review", "memory", "speech"}
    assert _celery(services["gateway-telegram"]) == ["nekoflow", "gateway", "telegram"]
    assert _celery(services["beat"])[:4] == ["celery", "-A", "nekoflow.worker", "beat"]
    assert _celery(services["flower"])[:4] == ["celery", "-A", "nekoflow.worker", "flower"]
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
            assert re.fullmatch(r"(127\.0\.0\.1:)?\d+:\d+", port), port
            host = port.split(":")[-2]
            assert host not in published, f"{name} and {published.get(host)} publish {host}"
            published[host] = name
    assert published == {  # Redis and PostgreSQL stay on the compose network
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


_VARIABLE = re.compile(r"\$\{(\w+)(?::([-?])([^}]*))?\}")
REQUIRED = {
    "POSTGRES_PASSWORD": "s3cret-pg",
    "FLOWER_BASIC_AUTH": "ops:s3cret-flower",
    "NEKOFLOW_MONITORING_HASH_KEY": "s3cret-hash-key",
}


def interpolate(value: str, env: dict[str, str]) -> str:
    """``value`` with Compose's ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?error}`` resolved
    from ``env`` (a ``:?`` variable unset or empty raises, as ``docker compose`` refuses)."""

    def one(match: re.Match[str]) -> str:
        name, op, arg = match.groups()
        got = env.get(name, "")
        if op == "?" and not got:
            raise LookupError(f"required variable {name} is missing a value: {arg}")
        return got or (arg if op == "-" else "")

    return _VARIABLE.sub(one, value)


def test_environment_is_valid_settings(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name in ("api", "worker-turns", "beat"):
        env = {k: interpolate(str(v), REQUIRED) for k, v in services[name]["environment"].items()}
        assert env["NEKOFLOW_DATABASE_URL"].startswith("postgresql://")
        assert "@postgres:5432/" in env["NEKOFLOW_DATABASE_URL"]
        assert env["NEKOFLOW_BROKER_URL"].startswith("redis://redis:6379")
        values = {
            k.removeprefix("NEKOFLOW_").lower(): v
            for k, v in env.items()
            if k.startswith("NEKOFLOW_") and v != ""
        }
        settings = Settings(**values)
        assert settings.uses_redis_cooldowns
        assert settings.scope_hash_key == b"s3cret-hash-key"  # Flower sees hashed scope ids
    assert "NEKOFLOW_API_TOKEN" in services["api"]["environment"]


def test_dockerfile_installs_what_the_services_run() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    for path in ("pyproject.toml", "nekoflow"):
        assert re.search(rf"COPY .*\b{re.escape(path)}\b", dockerfile), path
    assert "pip install" in dockerfile
    # The services run the installed package's app: the checkout's aliases are not in the image.
    assert not re.search(r"COPY .*\b(tasks|celeryconfig)\b", dockerfile)


def test_secrets_are_required_never_defaulted(compose: dict[str, Any]) -> None:
    """No password is baked in: PostgreSQL's, Flower's basic auth and the scope-id hash key
    come from the operator, and compose refuses to start without each of them."""
    services = compose["services"]
    text = (REPO / "docker-compose.yml").read_text()
    assert "nekoflow:nekoflow@" not in text
    postgres = services["postgres"]["environment"]
    assert postgres["POSTGRES_PASSWORD"].startswith("${POSTGRES_PASSWORD:?")
    api_env = services["api"]["environment"]
    assert api_env["NEKOFLOW_DATABASE_URL"].startswith(
        "postgresql://nekoflow:${POSTGRES_PASSWORD:?"
    )
    flower = services["flower"]["environment"]
    assert flower["FLOWER_BASIC_AUTH"].startswith("${FLOWER_BASIC_AUTH:?")
    assert flower["FLOWER_UNAUTHENTICATED_API"] == "false"
    assert flower["NEKOFLOW_MONITORING_SCOPE_IDS"] == "hashed"
    for variable, service, key in (
        ("POSTGRES_PASSWORD", "postgres", "POSTGRES_PASSWORD"),
        ("POSTGRES_PASSWORD", "worker-llm", "NEKOFLOW_DATABASE_URL"),
        ("FLOWER_BASIC_AUTH", "flower", "FLOWER_BASIC_AUTH"),
        ("NEKOFLOW_MONITORING_HASH_KEY", "worker-turns", "NEKOFLOW_MONITORING_HASH_KEY"),
    ):
        missing = {k: v for k, v in REQUIRED.items() if k != variable}
        with pytest.raises(LookupError, match=variable):
            interpolate(str(services[service]["environment"][key]), missing)
        assert REQUIRED[variable] in interpolate(
            str(services[service]["environment"][key]), REQUIRED
        )


def test_internal_services_are_not_published(compose: dict[str, Any]) -> None:
    """Redis (no password) and PostgreSQL are reachable only on the compose network; a port
    kept for convenience would have to be bound to 127.0.0.1."""
    for name in ("redis", "postgres"):
        for port in compose["services"][name].get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port}"


def test_flower_is_published_on_loopback_only(compose: dict[str, Any]) -> None:
    """Flower's basic auth travels in clear over plain HTTP: only this host reaches it (a TLS
    proxy serves it outside)."""
    assert compose["services"]["flower"]["ports"] == ["127.0.0.1:5555:5555"]


def _instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (keyword, arguments), continuation lines joined."""
    text = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            op, _, rest = line.strip().partition(" ")
            out.append((op.upper(), rest.strip()))
    return out


def test_the_image_runs_as_an_unprivileged_user() -> None:
    steps = _instructions()
    users = [i for i, (op, _) in enumerate(steps) if op == "USER"]
    assert users, "no USER instruction: the containers run as root"
    user = steps[users[-1]][1]
    assert user.split(":")[0] not in ("root", "0")
    assert all(op != "RUN" for op, _ in steps[users[-1] :])  # nothing runs as root after it
    assert any(op == "RUN" and "useradd" in rest and user in rest for op, rest in steps)
