"""A database made by an older release gains the columns added since, on both backends."""

from __future__ import annotations

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, inspect, text
from sqlmodel import Session, select

from nekoflow.storage import create_all, make_engine
from nekoflow.storage.schema import SchemaError, add_missing_columns
from nekoflow.storage.turns import TurnRun

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
