"""Start-up checks of the command line: a bad or unreachable URL becomes one line naming its
variable, before anything is written (no tracebacks for operators)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator

from nekoflow.redact import redact_urls

DB_DRIVERS = frozenset(
    {"MySQLdb", "pymysql", "mysqlclient", "cx_Oracle", "oracledb", "pyodbc", "pymssql"}
)
"""Driver modules SQLAlchemy asks for when the URL names a database nekoflow does not support."""

BROKER_TIMEOUT = 3.0
"""Seconds the broker pre-flight check may spend connecting."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def short(exc: BaseException) -> str:
    """An error as ``Class: first line`` without SQLAlchemy's background link nor any URL's
    password, ≤ 300 chars."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = re.sub(r"\s*\(Background on this error at:.*$", "", text)
    text = re.sub(r"^\([\w.]+\)\s*", "", text)  # SQLAlchemy's "(psycopg.OperationalError)"
    text = redact_urls(text)  # a driver may quote the URL, password included
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__


def _is(exc: BaseException, module: str, names: tuple[str, ...]) -> bool:
    mod = sys.modules.get(module)
    if mod is None:
        return False
    classes = tuple(getattr(mod, n) for n in names if hasattr(mod, n))
    return bool(classes) and isinstance(exc, classes)


def connection_error(exc: BaseException) -> str | None:
    """The one line for a database, Redis or broker URL that cannot be used (None otherwise)."""
    for e in _chain(exc):
        if isinstance(e, ModuleNotFoundError) and e.name in DB_DRIVERS:
            return (
                f"NEKOFLOW_DATABASE_URL: unsupported database (no driver {e.name!r}); "
                "use sqlite:///path or postgresql://user@host/db"
            )
        if _is(e, "sqlalchemy.exc", ("ArgumentError", "NoSuchModuleError")):
            return f"NEKOFLOW_DATABASE_URL: not a usable database URL ({short(e)})"
        if _is(e, "sqlalchemy.exc", ("OperationalError", "InterfaceError")):
            return f"NEKOFLOW_DATABASE_URL: cannot use the database ({short(e)})"
        if _is(e, "kombu.exceptions", ("OperationalError",)):
            return f"NEKOFLOW_BROKER_URL: cannot reach the broker ({short(e)})"
        if _is(e, "redis.exceptions", ("ConnectionError", "TimeoutError", "AuthenticationError")):
            return f"NEKOFLOW_REDIS_URL: cannot reach Redis ({short(e)})"
    return None


class StartupError(Exception):
    """A dependency the command needs cannot be used; the message names the variable."""


def check_broker(url: str, timeout: float = BROKER_TIMEOUT) -> None:
    """Connect to the Celery broker once (raise :class:`StartupError` naming the variable)."""
    if url.startswith("memory://"):
        return
    from kombu import Connection

    try:
        with Connection(
            url,
            connect_timeout=timeout,
            transport_options={"socket_timeout": timeout, "max_retries": 1},
        ) as conn:
            conn.ensure_connection(
                max_retries=1, interval_start=0, interval_step=0, timeout=timeout
            )
    except Exception as exc:
        raise StartupError(f"NEKOFLOW_BROKER_URL: cannot reach the broker ({short(exc)})") from None


def check_redis(url: str, timeout: float = BROKER_TIMEOUT) -> None:
    """PING Redis once (raise :class:`StartupError` naming ``NEKOFLOW_REDIS_URL``)."""
    import redis

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
        client.ping()
        client.close()
    except Exception as exc:
        raise StartupError(f"NEKOFLOW_REDIS_URL: cannot reach Redis ({short(exc)})") from None
