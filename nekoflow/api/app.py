"""``create_app``: the FastAPI application (world books, health, and the routers that plug in).

Routers are modules of ``nekoflow.api`` that expose ``router: APIRouter``; :data:`ROUTER_MODULES`
lists them in mounting order. ``turns`` and ``web`` (the turn and Web-chat endpoints) are mounted
when their modules exist and skipped otherwise, so they plug in by being added — nothing here
changes. Handlers reach shared objects through ``nekoflow.api.deps`` (``ApiState`` on
``app.state.nekoflow``).

``nekoflow serve`` builds the app with ``create_app()`` from the environment's settings; tests and
embedders pass their own ``settings``/``engine``/``redis_client``/``chat_model``/``turn_deps``.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import redis
from fastapi import APIRouter, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from sqlalchemy.engine import Engine

from nekoflow import __version__
from nekoflow.api.bodies import BodyLimitMiddleware, route_limits
from nekoflow.api.deps import ApiState
from nekoflow.api.errors import install_error_handlers
from nekoflow.llm.base import ChatModel
from nekoflow.settings import Settings, get_settings
from nekoflow.storage import create_all, make_engine
from nekoflow.turns.deps import TurnDeps

log = logging.getLogger("nekoflow.api")

ROUTER_MODULES: tuple[str, ...] = (
    "nekoflow.api.health",
    "nekoflow.api.worldbooks",
    "nekoflow.api.turns",
    "nekoflow.api.web",
    "nekoflow.api.voice",
    "nekoflow.api.telegram",
    "nekoflow.api.qqbot",
    "nekoflow.api.feishu",
    "nekoflow.api.onebot",
    "nekoflow.api.usage",
    "nekoflow.api.memories",
    "nekoflow.api.proactive",
    "nekoflow.observability.http",
    "nekoflow.api.runs_page",
)
"""Router modules in mounting order; each exposes ``router``."""

OPTIONAL_ROUTER_MODULES: frozenset[str] = frozenset({"nekoflow.api.turns", "nekoflow.api.web"})
"""Router modules that may not exist yet (mounted when present)."""

DESCRIPTION = (
    "nekoflow's HTTP API: world books (the seed's endpoints), health, turns and the Web channel. "
    "Write endpoints need `Authorization: Bearer <NEKOFLOW_API_TOKEN>`."
)


def load_routers(modules: tuple[str, ...] = ROUTER_MODULES) -> list[APIRouter]:
    """Import each router module and return its ``router``; absent optional modules are skipped."""
    routers: list[APIRouter] = []
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if name in OPTIONAL_ROUTER_MODULES and exc.name == name:
                continue
            raise
        routers.append(module.router)
    return routers


def _lifespan(state: ApiState) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if state.owns_engine:
            try:
                create_all(state.engine)
            except Exception as exc:  # keep serving: /healthz reports the database as down
                log.error("could not create tables at startup: %s", exc)
        try:
            yield
        finally:
            state.close()

    return lifespan


def create_app(
    settings: Settings | None = None,
    *,
    engine: Engine | None = None,
    redis_client: redis.Redis | None = None,
    chat_model: ChatModel | None = None,
    turn_deps: TurnDeps | None = None,
) -> FastAPI:
    """Build the API app.

    ``settings`` default to :func:`get_settings` (the environment). Without ``engine`` the app makes
    one for ``settings.database_url`` (tables created at startup, disposed at shutdown); without
    ``redis_client`` / ``chat_model`` / ``turn_deps`` it makes them from the settings on first
    use (built TurnDeps publish turns through the Celery app). Injected objects are used as given
    and never closed by the app.
    """
    settings = settings if settings is not None else get_settings()
    owns_engine = engine is None
    if engine is None:
        engine = make_engine(settings.database_url, **settings.engine_options())
    state = ApiState(
        settings=settings,
        engine=engine,
        owns_engine=owns_engine,
        redis_client=redis_client,
        chat_model=chat_model,
        turn_deps=turn_deps,
    )
    app = FastAPI(
        title="nekoflow",
        version=__version__,
        description=DESCRIPTION,
        lifespan=_lifespan(state),
    )
    app.state.nekoflow = state
    install_error_handlers(app)
    if settings.api_cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.api_cors_origins),
            allow_methods=["GET", "POST", "PUT", "DELETE", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type"],
        )
    for router in load_routers():
        app.include_router(router)
    limits = route_limits(
        app.routes,
        webhook=settings.api_webhook_max_body_bytes,
        world_books=settings.api_world_book_max_body_bytes,
        default=settings.api_max_body_bytes,
    )
    app.add_middleware(BodyLimitMiddleware, limit_for=limits)
    return app
