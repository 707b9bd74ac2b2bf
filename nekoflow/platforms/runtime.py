"""What every gateway process shares: logging set up at start, the pre-flight check of the
database and Redis, reasons that name the setting or host at fault, and rate-limited warnings.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Annotated

import typer
from sqlalchemy import text
from sqlalchemy.engine import Engine, make_url

from nekoflow.settings import Settings
from nekoflow.startup import StartupError, connection_error, short

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
"""One line per record: time, level, logger, message (what ``nekoflow gateway …`` prints)."""

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
"""The values ``--log-level`` / ``NEKOFLOW_LOG_LEVEL`` accept."""

LogLevel = Annotated[
    str,
    typer.Option(
        "--log-level",
        envvar="NEKOFLOW_LOG_LEVEL",
        help="DEBUG, INFO, WARNING or ERROR (default INFO; NEKOFLOW_LOG_LEVEL)",
    ),
]
"""The ``--log-level`` option every gateway command takes."""

PREFLIGHT_TIMEOUT = 3.0
"""Seconds each pre-flight check may spend connecting."""


def configure_logging(level: str = "INFO") -> None:
    """Send log records of ``level`` and above to stderr, one line each (a gateway's start).

    Idempotent: a second call only changes the level. Loggers that may print a token in a
    URL (httpx, httpcore) stay at WARNING whatever the level.
    """
    value = getattr(logging, level.upper(), None)
    if not isinstance(value, int):
        raise StartupError(
            f"NEKOFLOW_LOG_LEVEL: unknown level {level!r} (one of {', '.join(LOG_LEVELS)})"
        )
    root = logging.getLogger()
    if not any(getattr(h, "_nekoflow_gateway", False) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        handler._nekoflow_gateway = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(value)
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(max(value, logging.WARNING))


def shown_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (what may be printed)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not even parseable: show the scheme only
        return url.split("://", 1)[0] + "://…" if "://" in url else "(unparseable URL)"


def check_database(engine: Engine, url: str) -> None:
    """Run ``SELECT 1`` (raise :class:`StartupError` naming ``NEKOFLOW_DATABASE_URL``)."""
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:
        raise StartupError(
            f"NEKOFLOW_DATABASE_URL={shown_url(url)}: cannot use the database ({short(exc)})"
        ) from None


def check_redis(url: str, timeout: float = PREFLIGHT_TIMEOUT) -> None:
    """PING Redis once (raise :class:`StartupError` naming ``NEKOFLOW_REDIS_URL``)."""
    import redis

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:
        raise StartupError(
            f"NEKOFLOW_REDIS_URL={shown_url(url)}: cannot reach Redis ({short(exc)})"
        ) from None


def preflight(engine: Engine, database_url: str, redis_url: str | None) -> None:
    """Refuse to start a gateway while the database or (when used) Redis is unreachable."""
    check_database(engine, database_url)
    if redis_url is not None:
        check_redis(redis_url)


def preflight_settings(settings: Settings) -> None:
    """:func:`preflight` of the settings' database and (when part of the deployment) Redis."""
    from nekoflow.storage import make_engine

    engine = make_engine(settings.database_url)
    try:
        preflight(
            engine, settings.database_url, settings.redis_url if settings.redis_configured else None
        )
    finally:
        engine.dispose()


def reason(exc: BaseException) -> str:
    """Why a store or a call failed, naming the setting at fault when it is the database or
    Redis (``NEKOFLOW_REDIS_URL: cannot reach Redis (ConnectionError)``), else the error class.
    Never the message of other errors (it may quote a user's text or a URL with a token)."""
    line = connection_error(exc)
    if line is None:
        return type(exc).__name__
    setting, _, rest = line.partition(":")
    what = rest.split("(", 1)[0].strip()
    return f"{setting}: {what} ({type(exc).__name__})"


def is_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database or Redis cannot be reached (not a bad event)."""
    return connection_error(exc) is not None


class RateLimited:
    """Logs a message at most once per ``interval`` seconds per key, counting the rest."""

    def __init__(
        self,
        logger: logging.Logger,
        interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.interval = interval
        self.clock = clock
        self._last: dict[str, float] = {}
        self._muted: dict[str, int] = {}
        self._lock = threading.Lock()

    def log(self, level: int, key: str, msg: str, *args: object) -> bool:
        """Log ``msg % args`` unless ``key`` was logged less than ``interval`` ago (True: logged).

        The first line after a quiet spell says how many were not logged in between.
        """
        now = self.clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.interval:
                self._muted[key] = self._muted.get(key, 0) + 1
                return False
            self._last[key] = now
            muted = self._muted.pop(key, 0)
        if muted:
            msg += " (%d more like it not logged)"
            args = (*args, muted)
        self.logger.log(level, msg, *args)
        return True
