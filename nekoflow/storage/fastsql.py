"""Hot-path statements on the driver's cursor: a Core statement compiled once per dialect and run
with SQLAlchemy's own type processing, without its per-execution bookkeeping.

Every stage of every turn reads its turn and stores its result; through a Session those two
statements cost about four times what the driver needs for them (measured on PostgreSQL). A
:class:`FastStatement` keeps the statement's compiled SQL and its bind and result processors
(the same ``TypeEngine`` processors SQLAlchemy applies) and runs it on the DBAPI connection of
the caller's SQLAlchemy connection — inside its transaction. Errors come back as SQLAlchemy's
``DBAPIError`` subclasses, and a lost connection is invalidated as SQLAlchemy would.

PostgreSQL (psycopg) only; on other dialects :meth:`FastStatement.rows` runs the statement
through SQLAlchemy as usual. Statements with expanding (``IN``) parameters are not supported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import exc
from sqlalchemy.engine import Connection, Dialect

Processor = Callable[[Any], Any]


@dataclass
class _Compiled:
    """A statement's SQL for one dialect, and the processors of its binds and result columns."""

    compiled: Any
    sql: str
    binds: tuple[tuple[str, Processor], ...]
    results: tuple[Processor | None, ...] | None = None


class FastStatement:
    """A Core statement (``SELECT`` or DML ``… RETURNING``) run on the driver's cursor."""

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        self._by_dialect: dict[str, _Compiled] = {}

    def _compile(self, dialect: Dialect) -> _Compiled:
        compiled = self.statement.compile(dialect=dialect)
        binds: dict[str, Processor] = {}
        for bind, name in compiled.bind_names.items():
            if bind.expanding:
                raise ValueError(f"{name}: expanding parameters are not supported here")
            proc = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if proc is not None:  # one per name: a key used in several places is one value
                binds.setdefault(name, proc)
        found = _Compiled(compiled, compiled.string, tuple(binds.items()))
        self._by_dialect[dialect.name] = found
        return found

    def _result_processors(
        self, c: _Compiled, dialect: Dialect, description: Sequence[Any]
    ) -> tuple[Processor | None, ...]:
        """The result columns' processors, for the driver's column types (known once run)."""
        if c.results is None:
            c.results = tuple(
                col.type.dialect_impl(dialect).result_processor(dialect, desc[1])
                for col, desc in zip(self.statement.exported_columns, description, strict=True)
            )
        return c.results

    def rows(self, conn: Connection, params: Mapping[str, Any]) -> list[Sequence[Any]]:
        """Every row the statement returns, its values processed as SQLAlchemy would."""
        dialect = conn.dialect
        if dialect.name != "postgresql":
            return list(conn.execute(self.statement, dict(params)).all())
        c = self._by_dialect.get(dialect.name) or self._compile(dialect)
        args = c.compiled.construct_params(params)
        for name, proc in c.binds:
            args[name] = proc(args[name])
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None
        cursor = dbapi.cursor()
        try:
            cursor.execute(c.sql, args)
            description = cursor.description
            raw = cursor.fetchall() if description is not None else []
        except dialect.loaded_dbapi.Error as error:
            lost = dialect.is_disconnect(error, dbapi, cursor)
            if lost:
                conn.invalidate(error)
            raise exc.DBAPIError.instance(
                c.sql,
                args,
                error,
                dialect.loaded_dbapi.Error,
                connection_invalidated=lost,
                dialect=dialect,
            ) from error
        finally:
            cursor.close()
        if not raw:
            return raw
        procs = self._result_processors(c, dialect, description)
        if not any(procs):
            return raw
        return [
            tuple(v if p is None else p(v) for v, p in zip(row, procs, strict=True)) for row in raw
        ]

    def first(self, conn: Connection, params: Mapping[str, Any]) -> Sequence[Any] | None:
        """The first row, or None."""
        rows = self.rows(conn, params)
        return rows[0] if rows else None
