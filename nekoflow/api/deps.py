"""What route handlers depend on: the app's settings, engine, store, Redis, chat model, and auth.

:class:`ApiState` is built once by ``create_app`` and kept on ``app.state.nekoflow``; the
functions here hand its parts to handlers through FastAPI's ``Depends``. Injected objects (tests,
embedding) are used as given and never closed by the app; objects the app creates itself lazily
(Redis client, chat model) are closed on shutdown.

Auth: write endpoints depend on :func:`require_token`, which wants ``Authorization: Bearer
<NEKOFLOW_API_TOKEN>`` (compared in constant time). With no token configured, writes are refused
with 503 — never silently allowed, not even from loopback, because behind a reverse proxy every
request comes from loopback. Reads of turns, replies and scope ids depend on
:func:`require_read_token`: the same check, unless ``NEKOFLOW_API_PUBLIC_READS`` opens them.
"""

from __future__ import annotations

import hmac
import logging
import threading
from dataclasses import dataclass, field
from typing import Annotated

import redis
from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.engine import Engine

from nekoflow.api.errors import ApiError
from nekoflow.llm.base import ChatModel
from nekoflow.settings import Settings
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.books import BookCache
from nekoflow.turns.deps import TurnDeps
from nekoflow.worldbook.store import WorldBookStore

log = logging.getLogger("nekoflow.api")

TOKEN_NOT_CONFIGURED = "NEKOFLOW_API_TOKEN not configured"
READS_CLOSED = (
    f"{TOKEN_NOT_CONFIGURED}: reads of turns are closed "
    "(set the token, or NEKOFLOW_API_PUBLIC_READS=true to open them)"
)


@dataclass
class ApiState:
    """Everything the routers share for the app's lifetime."""

    settings: Settings
    engine: Engine
    owns_engine: bool = False
    redis_client: redis.Redis | None = None
    owns_redis: bool = False
    chat_model: ChatModel | None = None
    turn_deps: TurnDeps | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _books: BookCache | None = field(default=None, repr=False)

    def book_cache(self) -> BookCache:
        """Every world book, reloaded only when one changed (as a turn's recall reads them)."""
        with self._lock:
            if self._books is None:
                self._books = BookCache(self.engine)
            return self._books

    def redis(self) -> redis.Redis:
        """The injected Redis client, or one for ``settings.redis_url`` made on first use."""
        with self._lock:
            if self.redis_client is None:
                from nekoflow.redis_client import make_redis

                self.redis_client = make_redis(self.settings.redis_url, connect_timeout=2.0)
                self.owns_redis = True
            return self.redis_client

    def model(self) -> ChatModel:
        """The injected chat model, or the configured one (``make_chat_model``) on first use.

        Raises :class:`nekoflow.errors.ConfigError` (→ 503) when the LLM settings are unusable.
        """
        with self._lock:
            if self.chat_model is None:
                from nekoflow.llm.factory import make_chat_model

                self.chat_model = make_chat_model(self.settings)
            return self.chat_model

    def turns(self) -> TurnDeps:
        """The injected TurnDeps, or ones built from the settings on the app's engine on first use.

        The built ones publish through the Celery app (:func:`publish_or_defer`); raises
        :class:`nekoflow.errors.ConfigError` (→ 503) when the settings are unusable.
        """
        with self._lock:
            if self.turn_deps is None:
                self.turn_deps = TurnDeps.from_settings(
                    self.settings,
                    engine=self.engine,
                    publish=publish_or_defer,
                    chat_model=self.chat_model,
                )
            return self.turn_deps

    def close(self) -> None:
        """Release what the app created itself (never injected objects)."""
        if self.owns_redis and self.redis_client is not None:
            self.redis_client.close()
            self.redis_client = None
        if self.owns_engine:
            self.engine.dispose()


def publish_or_defer(run: TurnRun) -> None:
    """Send ``run``'s chain to the broker; if the broker is down, leave the turn to the sweeper.

    The TurnRun row is already stored, so the beat sweeper re-publishes it once its lease
    (``turn_lease_seconds``) runs out: the client still gets its turn id, never a 500.
    """
    from nekoflow.taskqueue import task_queue

    try:
        task_queue().publish_turn(run)
    except Exception as exc:  # broker unreachable: the sweeper publishes it later
        log.error("could not publish turn %s (the sweeper will retry): %s", run.turn_id, exc)


def get_state(request: Request) -> ApiState:
    """The :class:`ApiState` of the app serving ``request``."""
    return request.app.state.nekoflow


def get_settings(state: Annotated[ApiState, Depends(get_state)]) -> Settings:
    """The app's settings."""
    return state.settings


def get_engine(state: Annotated[ApiState, Depends(get_state)]) -> Engine:
    """The app's SQL engine."""
    return state.engine


def get_store(engine: Annotated[Engine, Depends(get_engine)]) -> WorldBookStore:
    """A world-book store over the app's engine."""
    return WorldBookStore(engine)


_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="bearerAuth",
    description="NEKOFLOW_API_TOKEN, required by every write endpoint.",
)


def token_matches(given: str, expected: str) -> bool:
    """Constant-time comparison of two tokens (UTF-8 bytes)."""
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def _check_bearer(
    state: ApiState, credentials: HTTPAuthorizationCredentials | None, unconfigured: str
) -> None:
    """401 unless the bearer token is NEKOFLOW_API_TOKEN; 503 ``unconfigured`` without one."""
    secret = state.settings.api_token
    expected = secret.get_secret_value().strip() if secret is not None else ""
    if not expected:
        raise ApiError(503, unconfigured)
    challenge = {"WWW-Authenticate": "Bearer"}
    if credentials is None:
        raise ApiError(401, "missing bearer token (Authorization: Bearer …)", headers=challenge)
    if not token_matches(credentials.credentials, expected):
        raise ApiError(
            401,
            "invalid bearer token",
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )


def require_token(
    state: Annotated[ApiState, Depends(get_state)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> None:
    """Allow the request only with ``Authorization: Bearer <NEKOFLOW_API_TOKEN>``.

    401 (with ``WWW-Authenticate: Bearer``) for a missing or wrong token; 503 when the server has
    no token configured, so writes are off until one is set.
    """
    _check_bearer(state, credentials, f"{TOKEN_NOT_CONFIGURED}: write endpoints are disabled")


def require_read_token(
    state: Annotated[ApiState, Depends(get_state)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> None:
    """Reads of turns, replies and scope ids: the bearer token, unless public reads are on.

    Like :func:`require_token` (401 / 503 without a configured token), except that
    ``NEKOFLOW_API_PUBLIC_READS=true`` lets every request through.
    """
    if state.settings.api_public_reads:
        return
    _check_bearer(state, credentials, READS_CLOSED)


def has_token(state: ApiState, credentials: HTTPAuthorizationCredentials | None) -> bool:
    """Whether the request carries the configured bearer token."""
    secret = state.settings.api_token
    expected = secret.get_secret_value().strip() if secret is not None else ""
    return (
        bool(expected)
        and credentials is not None
        and token_matches(credentials.credentials, expected)
    )


def rate_limited(state: ApiState, bucket: str, client: str, per_minute: int) -> None:
    """429 once ``client`` made more than ``per_minute`` calls of ``bucket`` this minute (Redis);
    503 when Redis is down (never unlimited)."""
    key = f"{state.settings.redis_prefix}:ratelimit:{bucket}:{client}"
    try:
        pipe = state.redis().pipeline()
        pipe.set(key, 0, ex=60, nx=True)
        pipe.incr(key)
        count = int(pipe.execute()[1])
    except redis.RedisError as exc:
        raise ApiError(503, "Redis unavailable: the rate limit cannot be checked") from exc
    if count > per_minute:
        raise ApiError(429, f"too many requests: at most {per_minute} a minute without the token")


def require_token_or_public_rate(
    request: Request,
    state: Annotated[ApiState, Depends(get_state)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> bool:
    """The bearer token (True), or — with public reads — a rate-limited anonymous call (False)."""
    if has_token(state, credentials):
        return True
    if not state.settings.api_public_reads:
        _check_bearer(state, credentials, READS_CLOSED)
    client = request.client.host if request.client is not None else "unknown"
    rate_limited(state, "test-match", client, state.settings.api_test_match_per_minute)
    return False


StateDep = Annotated[ApiState, Depends(get_state)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
StoreDep = Annotated[WorldBookStore, Depends(get_store)]
WriteAuth = Depends(require_token)
"""Add to a route's ``dependencies=[...]`` to make it a write endpoint."""
ReadAuth = Depends(require_read_token)
"""Add to a route's ``dependencies=[...]`` to close a read of turns, replies or scope ids."""
