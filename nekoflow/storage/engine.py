"""SQL engine and session helpers: SQLite (WAL, foreign keys on) or PostgreSQL via psycopg 3."""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.pool import NullPool
from sqlmodel import Session, SQLModel, create_engine


def normalize_url(url: str) -> str:
    """Route plain ``postgresql://``/``postgres://`` URLs to the psycopg 3 driver."""
    parsed = make_url(
        url.replace("postgres://", "postgresql://", 1) if url.startswith("postgres://") else url
    )
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def make_engine(url: str, *, echo: bool = False, **kwargs: Any) -> Engine:
    """Create an engine for ``url``; SQLite gets WAL mode, foreign keys and a busy timeout.

    Extra keyword arguments go to :func:`sqlalchemy.create_engine` (e.g. ``connect_args``).
    """
    url = normalize_url(url)
    if url.startswith("sqlite"):
        connect_args = {"check_same_thread": False, "timeout": 30, **kwargs.pop("connect_args", {})}
        is_memory = url in ("sqlite://", "sqlite:///:memory:")
        if not is_memory:
            kwargs.setdefault("poolclass", NullPool)
        engine = create_engine(url, echo=echo, connect_args=connect_args, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # No pre-ping (it costs a round trip on every checkout, i.e. on every stage): a connection
    # that died with a server restart raises once, SQLAlchemy then drops the whole pool, and the
    # stage is retried (``nekoflow.turns.runner``). Idle connections are recycled before any
    # server- or proxy-side idle timeout would cut them.
    kwargs.setdefault("pool_pre_ping", False)
    kwargs.setdefault("pool_recycle", 1800)
    return create_engine(url, echo=echo, **kwargs)


_autocommit: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()


def read_session(engine: Engine) -> Session:
    """A session for reads only, on an autocommit connection: no BEGIN/ROLLBACK round trips
    (each statement sees what was committed when it ran). Never commit through it."""
    reader = _autocommit.get(engine)
    if reader is None:
        reader = _autocommit[engine] = engine.execution_options(isolation_level="AUTOCOMMIT")
    return Session(reader, expire_on_commit=False)


def create_all(engine: Engine) -> None:
    """Create every nekoflow table that does not exist yet and add the columns, indexes and
    storage options a database made by an older release lacks (idempotent)."""
    from nekoflow.memory.store import backfill
    from nekoflow.storage import tables  # noqa: F401  (registers every table on the metadata)
    from nekoflow.storage.memory import ensure_memory_index
    from nekoflow.storage.schema import add_missing_columns, tune_tables, update_indexes

    SQLModel.metadata.create_all(engine)
    add_missing_columns(engine, SQLModel.metadata)
    update_indexes(engine, SQLModel.metadata)
    tune_tables(engine)
    ensure_memory_index(engine)  # full-text index over memories (after any added columns)
    with Session(engine) as s:  # memories from before long-term memory get their terms
        if backfill(s):
            s.commit()


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session that commits on success and rolls back on any exception."""
    with Session(engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


_default_engine: Engine | None = None


def get_engine() -> Engine:
    """The process-wide engine for ``Settings.database_url``, tables created on first use."""
    global _default_engine
    if _default_engine is None:
        from nekoflow.settings import get_settings

        settings = get_settings()
        _default_engine = make_engine(settings.database_url, **settings.engine_options())
        create_all(_default_engine)
    return _default_engine


def reset_engine() -> None:
    """Dispose the process-wide engine (after fork, or when settings change in tests)."""
    global _default_engine
    if _default_engine is not None:
        _default_engine.dispose()
    _default_engine = None
