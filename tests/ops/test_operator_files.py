"""docker-compose and the README tell a new operator what they need: config.ini mounted,
Flower's API authentication, metrics endpoints; a broken config.ini shows in /healthz."""

from __future__ import annotations

from pathlib import Path

import yaml
from fastapi.testclient import TestClient

from nekoflow.api.app import create_app
from nekoflow.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def test_compose_mounts_config_ini_and_documents_flower_auth() -> None:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = compose["services"]
    for name in ("api", "worker-turns", "worker-llm", "worker-outbound", "gateway-onebot"):
        service = services[name]
        assert "./examples/config.ini:/app/config.ini:ro" in service["volumes"], name
        assert service["environment"]["NEKOFLOW_RUNTIME_CONFIG_PATH"] == "/app/config.ini"
    assert (REPO / "examples" / "config.ini").is_file()
    assert "FLOWER_UNAUTHENTICATED_API" in services["flower"]["environment"]
    readme = "\n".join(  # the README and the docs it links to
        p.read_text(encoding="utf-8") for p in [REPO / "README.md", *(REPO / "docs").rglob("*.md")]
    )
    assert "FLOWER_UNAUTHENTICATED_API" in readme
    for name in ("/metrics", "PROMETHEUS_MULTIPROC_DIR", "NEKOFLOW_TRACING", "/runs"):
        assert name in readme, name


def test_healthz_reports_a_broken_config_ini(engine, tmp_path: Path) -> None:
    config = tmp_path / "config.ini"
    config.write_text("[character_runtime_qq]\ntrigger = sometimes\n", encoding="utf-8")
    settings = Settings(
        database_url=str(engine.url), broker_url="memory://", runtime_config_path=str(config)
    )
    with TestClient(create_app(settings, engine=engine)) as client:
        response = client.get("/healthz")
        assert response.status_code == 503
        body = response.json()
        assert body["failing"] == ["config"]
        assert "trigger" in body["checks"]["config"]["detail"]
        config.write_text("[character_runtime_qq]\ntrigger = always\n", encoding="utf-8")
        assert client.get("/healthz").status_code == 200
