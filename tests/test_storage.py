"""The storage shell: engine creation, SQLite pragmas, URL normalisation, session rollback."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from nekoflow.storage import make_engine, normalize_url, session_scope


def test_normalize_url_routes_postgres_to_psycopg3() -> None:
    assert normalize_url("postgresql://u@h/db").startswith("postgresql+psycopg://")
    assert normalize_url("postgres://u@h/db").startswith("postgresql+psycopg://")
    assert normalize_url("postgresql+psycopg://u:p@h/db") == "postgresql+psycopg://u:p@h/db"
    assert normalize_url("sqlite:///x.db") == "sqlite:///x.db"


def test_sqlite_is_wal_with_foreign_keys(tmp_path) -> None:
    eng = make_engine(f"sqlite:///{tmp_path / 'a.db'}")
    with eng.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
    eng.dispose()


def test_session_scope_rolls_back_on_error(engine) -> None:
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE probe (id INTEGER PRIMARY KEY)"))
    with pytest.raises(RuntimeError), session_scope(engine) as s:
        s.exec(text("INSERT INTO probe (id) VALUES (1)"))
        raise RuntimeError("boom")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM probe")).scalar() == 0


def test_engine_reaches_backend(engine) -> None:
    with engine.connect() as conn:
        assert conn.execute(text("SELECT 1")).scalar() == 1
