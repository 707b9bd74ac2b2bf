"""The SQL system of record: engine/session helpers and the table modules."""

from nekoflow.storage.engine import (
    create_all,
    get_engine,
    make_engine,
    normalize_url,
    read_session,
    reset_engine,
    session_scope,
)

__all__ = [
    "create_all",
    "get_engine",
    "make_engine",
    "normalize_url",
    "read_session",
    "reset_engine",
    "session_scope",
]
