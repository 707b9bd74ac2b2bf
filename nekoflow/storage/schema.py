"""Bring an existing database up to the current tables: add the columns a newer nekoflow defines.

``create_all`` only creates missing tables, so a database made by an older release would lack
the columns added since (and every query naming them would fail). This adds each missing column
with ``ALTER TABLE … ADD COLUMN``; a column that can be added must be nullable or carry a server
default — anything else is an error naming the table and column, raised before any change.
"""

from __future__ import annotations

import logging

from sqlalchemy import Column, MetaData, Table, inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

log = logging.getLogger(__name__)


class SchemaError(RuntimeError):
    """The database cannot be brought up to the current tables automatically."""


def missing_columns(engine: Engine, metadata: MetaData) -> list[tuple[Table, Column]]:
    """The (table, column) pairs the metadata defines and the database's existing tables lack."""
    insp = inspect(engine)
    existing = set(insp.get_table_names())
    missing: list[tuple[Table, Column]] = []
    for table in metadata.sorted_tables:
        if table.name not in existing:
            continue
        have = {c["name"] for c in insp.get_columns(table.name)}
        missing.extend((table, c) for c in table.columns if c.name not in have)
    return missing


def _addable(column: Column) -> bool:
    return column.nullable is not False or column.server_default is not None


def _ddl(engine: Engine, table: Table, column: Column) -> str:
    prep = engine.dialect.identifier_preparer
    kind = column.type.compile(dialect=engine.dialect)
    # IF NOT EXISTS (PostgreSQL): two processes starting together may both add the column.
    guard = "IF NOT EXISTS " if engine.dialect.name == "postgresql" else ""
    target = f"{prep.format_column(column)} {kind}"
    sql = f"ALTER TABLE {prep.format_table(table)} ADD COLUMN {guard}{target}"
    default = column.server_default
    if default is not None:
        arg = getattr(default, "arg", None)
        value = arg.text if hasattr(arg, "text") else f"'{arg}'"
        sql += f" DEFAULT {value}"
    if column.nullable is False:
        sql += " NOT NULL"
    return sql


def add_missing_columns(engine: Engine, metadata: MetaData) -> list[str]:
    """Add every missing addable column; returns ``table.column`` names added."""
    missing = missing_columns(engine, metadata)
    blocked = [f"{t.name}.{c.name}" for t, c in missing if not _addable(c)]
    if blocked:
        raise SchemaError(
            "the database predates columns that cannot be added automatically (not null, no "
            f"default): {', '.join(blocked)}; migrate them by hand or start from a new database"
        )
    added: list[str] = []
    for table, column in missing:
        try:
            with engine.begin() as conn:
                conn.execute(text(_ddl(engine, table, column)))
        except OperationalError:  # SQLite: another process added it first
            still = {c for _, c in missing_columns(engine, metadata)}
            if column in still:
                raise
            continue
        added.append(f"{table.name}.{column.name}")
    for name in added:
        log.warning("database upgraded: added column %s", name)
    return added
