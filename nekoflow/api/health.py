"""``GET /healthz``: is the database, Redis and the Celery broker reachable, config.ini valid?

200 with ``status: ok`` when every check passes, 503 with ``status: unavailable`` and the failing
ones in ``failing`` otherwise. Each check is bounded by a short timeout. An in-memory broker
(``memory://``) is always reachable. Redis is checked whenever the app has a Redis client or the
settings use Redis (broker, cooldowns, event bus or AutoState); with none of those it is reported
ok as "not used". ``?deep=1`` (bearer token required) runs every ``nekoflow doctor`` check
instead: queue consumers, beat, the model, each platform bot; each failing one says the fix.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials
from fastapi.security.utils import get_authorization_scheme_param
from sqlalchemy import text

from nekoflow.api.deps import ApiState, StateDep, require_token
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

    from nekoflow.turns.config_watch import check_config as parse_config

    path = settings.runtime_config_path
    error = parse_config(path)
    if error is not None:
        log.warning("health: %s is invalid: %s", path, error)
        return HealthCheck(ok=False, detail=error.replace(path, "config.ini")[:300])
    return HealthCheck(ok=True, detail="valid" if Path(path).is_file() else "absent: defaults")


def deep_checks(state: ApiState) -> dict[str, HealthCheck]:
    """``nekoflow doctor``'s checks (queues, beat, model, platform bots …) and config.ini."""
    from nekoflow.doctor import run_checks

    checks = {
        c.name: HealthCheck(ok=c.ok, detail=c.detail, fix=c.fix or None)
        for c in run_checks(state.settings)
    }
    checks["config"] = check_config(state.settings)
    return checks


@router.get(
    "/healthz",
    response_model=HealthResponse,
    responses={
        401: {"description": "deep=1 without the bearer token"},
        503: {"model": HealthResponse, "description": "A dependency is unreachable"},
    },
    summary="Database, Redis and broker reachability (deep=1: every nekoflow doctor check)",
)
def healthz(
    state: StateDep,
    request: Request,
    deep: Annotated[
        bool, Query(description="Run every `nekoflow doctor` check (needs the API token).")
    ] = False,
) -> JSONResponse:
    """Check every dependency; 503 names the failing ones. ``deep=1``: the doctor's checks,
    only with ``Authorization: Bearer <NEKOFLOW_API_TOKEN>`` (they probe bots and the model)."""
    if deep:  # the header is read here: the shallow check stays open (load balancers)
        scheme, token = get_authorization_scheme_param(request.headers.get("Authorization"))
        credentials = (
            HTTPAuthorizationCredentials(scheme=scheme, credentials=token)
            if scheme.lower() == "bearer" and token
            else None
        )
        require_token(state, credentials)
        checks = deep_checks(state)
        failing = [name for name, check in checks.items() if not check.ok]
        status = "unavailable" if failing else "ok"
        body = HealthResponse(status=status, checks=checks, failing=failing)
        content = body.model_dump(exclude_none=True)
        return JSONResponse(status_code=503 if failing else 200, content=content)
    checks = {
        "database": check_database(state),
        "redis": check_redis(state),
        "broker": check_broker(state.settings),
        "config": check_config(state.settings),
    }
    failing = [name for name, check in checks.items() if not check.ok]
    body = HealthResponse(status="unavailable" if failing else "ok", checks=checks, failing=failing)
    content = body.model_dump(exclude_none=True)
    return JSONResponse(status_code=503 if failing else 200, content=content)
