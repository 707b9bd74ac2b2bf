"""``GET /healthz``: is the database, Redis and the Celery broker reachable, config.ini valid?

200 with ``status: ok`` when every check passes, 503 with ``status: unavailable`` and the failing
ones in ``failing`` otherwise. Each check is bounded by a short timeout. An in-memory broker
(``memory://``) is always reachable. Redis is checked whenever the app has a Redis client or the
settings use Redis (broker, cooldowns, event bus or AutoState); with none of those it is reported
ok as "not used".
"""

from __future__ import annotations

import logging

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy import text

from nekoflow.api.deps import ApiState, StateDep
from nekoflow.api.schemas import HealthCheck, HealthResponse
from nekoflow.settings import Settings

log = logging.getLogger("nekoflow.api")

router = APIRouter(tags=["health"])

BROKER_TIMEOUT = 2.0
"""Seconds the broker check may spend connecting."""


def _short(exc: BaseException) -> str:
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}"[:300]


def check_database(state: ApiState) -> HealthCheck:
    """``SELECT 1`` on the app's engine."""
    try:
        with state.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:
        log.warning("health: database unreachable: %s", exc)
        return HealthCheck(ok=False, detail=_short(exc))
    return HealthCheck(ok=True, detail=state.engine.dialect.name)


def uses_redis(settings: Settings) -> bool:
    """Whether anything configured lives in Redis (broker, cooldowns, events, AutoState)."""
    broker = settings.broker_url or ""
    return (
        broker.startswith(("redis://", "rediss://", "redis+socket://"))
        or settings.uses_redis_cooldowns
        or settings.effective_event_bus == "redis"
        or settings.effective_autostate_backend == "redis"
    )


def check_redis(state: ApiState) -> HealthCheck:
    """``PING`` the app's Redis (skipped as ok when nothing uses Redis)."""
    if state.redis_client is None and not uses_redis(state.settings):
        return HealthCheck(ok=True, detail="not used")
    try:
        state.redis().ping()
    except Exception as exc:
        log.warning("health: redis unreachable: %s", exc)
        return HealthCheck(ok=False, detail=_short(exc))
    return HealthCheck(ok=True, detail="PONG")


def check_broker(settings: Settings) -> HealthCheck:
    """Connect to the Celery broker with kombu, one try, bounded by :data:`BROKER_TIMEOUT`."""
    url = settings.broker_url or ""
    if url.startswith("memory://"):
        return HealthCheck(ok=True, detail="memory")
    from kombu import Connection

    try:
        with Connection(
            url,
            connect_timeout=BROKER_TIMEOUT,
            transport_options={"socket_timeout": BROKER_TIMEOUT, "max_retries": 1},
        ) as conn:
            conn.ensure_connection(
                max_retries=1, interval_start=0, interval_step=0, timeout=BROKER_TIMEOUT
            )
            transport = conn.transport_cls
    except Exception as exc:
        log.warning("health: broker unreachable: %s", exc)
        return HealthCheck(ok=False, detail=_short(exc))
    return HealthCheck(ok=True, detail=str(transport))


def check_config(settings: Settings) -> HealthCheck:
    """Parse ``config.ini`` (NEKOFLOW_RUNTIME_CONFIG_PATH) as the turns would; absent is ok."""
    from pathlib import Path

    from nekoflow.channels.config_watch import check_config as parse_config

    path = settings.runtime_config_path
    error = parse_config(path)
    if error is not None:
        log.warning("health: %s is invalid: %s", path, error)
        return HealthCheck(ok=False, detail=error.replace(path, "config.ini")[:300])
    return HealthCheck(ok=True, detail="valid" if Path(path).is_file() else "absent: defaults")


@router.get(
    "/healthz",
    response_model=HealthResponse,
    responses={503: {"model": HealthResponse, "description": "A dependency is unreachable"}},
    summary="Database, Redis and broker reachability",
)
def healthz(state: StateDep) -> JSONResponse:
    """Check every dependency; 503 names the failing ones."""
    checks = {
        "database": check_database(state),
        "redis": check_redis(state),
        "broker": check_broker(state.settings),
        "config": check_config(state.settings),
    }
    failing = [name for name, check in checks.items() if not check.ok]
    body = HealthResponse(status="unavailable" if failing else "ok", checks=checks, failing=failing)
    return JSONResponse(status_code=503 if failing else 200, content=body.model_dump())
