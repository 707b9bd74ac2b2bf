"""Bring an existing database up to the current tables: the columns, indexes and storage
options a newer nekoflow defines.

``create_all`` only creates missing tables, so a database made by an older release would lack
the columns added since (and every query naming them would fail). This adds each missing column
with ``ALTER TABLE … ADD COLUMN``; a column that can be added must be nullable or carry a server
default — anything else is an error naming the table and column, raised before any change. It
also creates the indexes an existing table lacks, drops the ones a release retired, and sets
the PostgreSQL fill factor of the tables updated in place.
"""

from __future__ import annotations

import logging

from sqlalchemy import Column, MetaData, Table, inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.schema import CreateIndex

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


RETIRED_INDEXES: dict[str, tuple[str, ...]] = {
    # (status, updated_at): every progress update of a turn changed it, so none was HOT.
    "turn_run": ("ix_turn_run_status_updated",),
}
"""Indexes an older release created that the current tables no longer define (dropped)."""

FILLFACTOR: dict[str, int] = {"turn_run": 80}
"""PostgreSQL fill factor per table: room on each page for the row's next version, so the
frequent updates of a turn's row stay on its page (HOT) instead of adding index entries."""


def _index_names(engine: Engine) -> set[str]:
    """Every index name in the database's current schema, in one catalog query (index names
    are unique per schema on both databases)."""
    sql = (
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
        if engine.dialect.name == "postgresql"
        else "SELECT name FROM sqlite_master WHERE type = 'index'"
    )
    with engine.connect() as conn:
        return {row[0] for row in conn.execute(text(sql))}


def update_indexes(engine: Engine, metadata: MetaData) -> list[str]:
    """Create the indexes the metadata defines that an existing table lacks, and drop the
    retired ones it still has; returns what changed (``+name``/``-name``)."""
    have = _index_names(engine)
    existing: set[str] | None = None
    changed: list[str] = []
    for table in metadata.sorted_tables:
        retired = [n for n in RETIRED_INDEXES.get(table.name, ()) if n in have]
        wanted = [ix for ix in table.indexes if ix.name not in have]
        if not (retired or wanted):
            continue
        if existing is None:  # only when something may be missing (a new table has them all)
            existing = set(inspect(engine).get_table_names())
        if table.name not in existing:
            continue
        prep = engine.dialect.identifier_preparer
        try:
            with engine.begin() as conn:
                for name in retired:
                    conn.execute(text(f"DROP INDEX IF EXISTS {prep.quote(name)}"))
                for index in wanted:
                    # IF NOT EXISTS: two processes starting together may both create it.
                    conn.execute(CreateIndex(index, if_not_exists=True))
        except DBAPIError:  # the other process's CREATE won the race: fine if it is there now
            if any(ix.name not in _index_names(engine) for ix in wanted):
                raise
        changed += [f"-{name}" for name in retired] + [f"+{ix.name}" for ix in wanted]
    for name in changed:
        log.warning("database upgraded: index %s", name)
    return changed


def tune_tables(engine: Engine) -> list[str]:
    """Give the tables of :data:`FILLFACTOR` their fill factor where it is not set yet
    (PostgreSQL; it applies to pages written from then on); returns the tables changed."""
    if engine.dialect.name != "postgresql":
        return []
    changed: list[str] = []
    with engine.begin() as conn:
        for table, factor in FILLFACTOR.items():
            options = conn.execute(
                text("SELECT reloptions FROM pg_class WHERE oid = to_regclass(:t)"), {"t": table}
            ).first()
            if options is None or f"fillfactor={factor}" in (options[0] or []):
                continue  # no such table (yet), or already set
            prep = engine.dialect.identifier_preparer
            conn.execute(text(f"ALTER TABLE {prep.quote(table)} SET (fillfactor = {factor})"))
            changed.append(table)
    return changed
