"""A database made by an older release gains the columns, indexes and storage options added
since, on both backends."""

from __future__ import annotations

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, inspect, text
from sqlmodel import Session, select

from nekoflow.storage import create_all, make_engine
from nekoflow.storage.schema import SchemaError, add_missing_columns
from nekoflow.storage.turns import TurnRun
from nekoflow.turns import stage_store
from tests.conftest import PG_URL

DROPPED = ("not_before", "delivery_reason")


def _columns(engine, table: str) -> set[str]:
    return {c["name"] for c in inspect(engine).get_columns(table)}


def test_an_older_database_gains_the_new_columns(db_url: str) -> None:
    engine = make_engine(db_url)
    create_all(engine)
    with engine.begin() as conn:  # what an older release created
        for name in DROPPED:
            conn.execute(text(f"ALTER TABLE turn_run DROP COLUMN {name}"))
    assert not set(DROPPED) & _columns(engine, "turn_run")
    create_all(engine)
    assert set(DROPPED) <= _columns(engine, "turn_run")
    with Session(engine) as s:  # the ORM can read and write it again
        s.add(TurnRun(turn_id="t-upgrade", channel="web"))
        s.commit()
        row = s.exec(select(TurnRun).where(TurnRun.turn_id == "t-upgrade")).one()
        assert row.not_before is None and row.delivery_reason is None
    create_all(engine)  # idempotent
    engine.dispose()


def test_a_column_that_cannot_be_added_is_named_and_nothing_changes(db_url: str) -> None:
    engine = make_engine(db_url)
    old = MetaData()
    Table("legacy_t", old, Column("id", Integer, primary_key=True))
    old.create_all(engine)
    new = MetaData()
    Table(
        "legacy_t",
        new,
        Column("id", Integer, primary_key=True),
        Column("note", String(20), nullable=True),
        Column("must", String(20), nullable=False),
    )
    with pytest.raises(SchemaError, match=r"legacy_t\.must"):
        add_missing_columns(engine, new)
    assert _columns(engine, "legacy_t") == {"id"}
    engine.dispose()


def _indexes(engine, table: str) -> dict[str, list[str]]:
    return {ix["name"]: ix["column_names"] for ix in inspect(engine).get_indexes(table)}


def test_an_older_database_trades_the_retired_index_for_the_new_one(db_url: str) -> None:
    engine = make_engine(db_url)
    create_all(engine)
    with engine.begin() as conn:  # what an older release created
        conn.execute(text("DROP INDEX ix_turn_run_status_created"))
        conn.execute(
            text("CREATE INDEX ix_turn_run_status_updated ON turn_run (status, updated_at)")
        )
    create_all(engine)
    indexes = _indexes(engine, "turn_run")
    assert indexes["ix_turn_run_status_created"] == ["status", "created_at"]
    assert "ix_turn_run_status_updated" not in indexes
    create_all(engine)  # idempotent
    assert _indexes(engine, "turn_run") == indexes
    engine.dispose()


@pytest.mark.parametrize(
    "db_url",
    [pytest.param("postgres", marks=pytest.mark.skipif(not PG_URL, reason="no PostgreSQL"))],
    indirect=True,
)
def test_a_stage_progress_update_of_the_turn_row_is_hot(db_url: str) -> None:
    """PostgreSQL's HOT update (no new index entries) needs an update that changes no indexed
    column and room on the row's page: a stored stage result updates the turn's row."""
    engine = make_engine(db_url)
    create_all(engine)
    with engine.begin() as conn:  # a table made before the fill factor was set gets it
        conn.execute(text("ALTER TABLE turn_run RESET (fillfactor)"))
    create_all(engine)
    with engine.connect() as conn:
        options = conn.execute(
            text("SELECT reloptions FROM pg_class WHERE oid = to_regclass('turn_run')")
        ).scalar()
        assert "fillfactor=80" in options
    with Session(engine) as s:
        s.add(TurnRun(turn_id="t-hot", channel="web", scope_id="s", seq=1, status="running"))
        s.commit()
    with engine.connect() as conn:
        for stage in ("dispatch", "before_turn", "llm_call"):
            assert stage_store.put_stage(conn, "t-hot", stage, {"ok": True}, llm_attempts=1)
        hot, updated = conn.execute(
            text(
                "SELECT pg_stat_get_xact_tuples_hot_updated(to_regclass('turn_run')),"
                " pg_stat_get_xact_tuples_updated(to_regclass('turn_run'))"
            )
        ).one()
        conn.commit()
    assert (hot, updated) == (3, 3)
    engine.dispose()
