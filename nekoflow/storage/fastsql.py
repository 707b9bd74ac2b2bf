"""Hot-path statements on the driver's cursor: a Core statement compiled once per dialect and run
with SQLAlchemy's own type processing, without its per-execution bookkeeping.

Every stage of every turn reads its turn and stores its result; through a Session those two
statements cost about four times what the driver needs for them (measured on PostgreSQL). A
:class:`FastStatement` keeps the statement's compiled SQL and its bind and result processors
(the same ``TypeEngine`` processors SQLAlchemy applies) and runs it on the DBAPI connection of
the caller's SQLAlchemy connection — inside its transaction. Errors come back as SQLAlchemy's
``DBAPIError`` subclasses, and a lost connection is invalidated as SQLAlchemy would.

PostgreSQL (psycopg) only; on other dialects :meth:`FastStatement.rows` runs the statement
through SQLAlchemy as usual. An expanding (``IN``) parameter must carry its values in the
statement (a constant list, expanded once at compile time); one given per call is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import exc
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.orm import Session, configure_mappers, instrumentation, make_transient_to_detached

Processor = Callable[[Any], Any]
T = TypeVar("T")
Bind = Connection | Session
"""Where a statement runs: a Connection, or a Session (its connection, in its transaction)."""


def dialect_name(bind: Bind) -> str:
    """The database dialect of ``bind`` (``postgresql``, ``sqlite``)."""
    return bind.get_bind().dialect.name if isinstance(bind, Session) else bind.dialect.name


@dataclass
class _Compiled:
    """A statement's SQL for one dialect, and the processors of its binds and result columns."""

    compiled: Any
    sql: str
    binds: tuple[tuple[str, Processor], ...]
    #: Processed values of the constant expanding parameters, keyed as in ``sql``.
    constants: dict[str, Any]
    expanding: tuple[str, ...]
    #: Whether the statement declares result columns (a SELECT, a DML ``… RETURNING``).
    returns: bool
    #: Columns an INSERT/UPDATE fills from their Python-side default when not given.
    defaults: tuple[tuple[str, Any], ...]
    #: Result column processors, known after the first run (``()`` when none is needed).
    results: tuple[Processor | None, ...] | None = None


_CURSOR = "nekoflow.fastsql.cursor"


class FastStatement:
    """A Core statement (``SELECT`` or DML ``… RETURNING``) run on the driver's cursor."""

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        self._by_dialect: dict[str, _Compiled] = {}

    def _compile(self, dialect: Dialect) -> _Compiled:
        compiled = self.statement.compile(dialect=dialect)
        binds: dict[str, Processor] = {}
        expanding: dict[str, Any] = {}
        for bind, name in compiled.bind_names.items():
            proc = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if bind.expanding:
                if bind.value is None or bind.callable is not None:
                    raise ValueError(f"{name}: an expanding parameter needs constant values")
                expanding[name] = proc
            elif proc is not None:  # one per name: a key used in several places is one value
                binds.setdefault(name, proc)
        sql, constants = compiled.string, {}
        if expanding:  # IN (…) of constants: expanded once, its values processed once
            placeholders = {n: None for n in compiled.bind_names.values() if n not in expanding}
            state = compiled.construct_expanded_state(placeholders)
            sql = state.statement
            for name, proc in expanding.items():
                for key in state.parameter_expansion[name]:
                    value = state.parameters[key]
                    constants[key] = value if proc is None else proc(value)
        returns = bool(self.statement.exported_columns)
        defaults = tuple(
            (column.key, default)
            for columns, attr in (
                (compiled.insert_prefetch, "default"),
                (compiled.update_prefetch, "onupdate"),
            )
            for column in columns
            if (default := getattr(column, attr)) is not None
        )
        found = _Compiled(
            compiled, sql, tuple(binds.items()), constants, tuple(expanding), returns, defaults
        )
        self._by_dialect[dialect.name] = found
        return found

    def _result_processors(
        self, c: _Compiled, dialect: Dialect, description: Sequence[Any]
    ) -> tuple[Processor | None, ...]:
        """The result columns' processors, for the driver's column types (known once run)."""
        if c.results is None:
            procs = tuple(
                col.type.dialect_impl(dialect).result_processor(dialect, desc[1])
                for col, desc in zip(self.statement.exported_columns, description, strict=True)
            )
            c.results = procs if any(procs) else ()  # () when no column needs processing
        return c.results

    def rows(self, bind: Bind, params: Mapping[str, Any]) -> list[Sequence[Any]]:
        """Every row the statement returns (plain tuples), its values processed as SQLAlchemy
        would; ``bind``: a Connection, or a Session (its connection, in its transaction)."""
        conn = bind.connection() if isinstance(bind, Session) else bind
        if not conn.in_transaction():
            conn.begin()  # as SQLAlchemy's autobegin: the caller's commit() then commits this
        dialect = conn.dialect
        if dialect.name != "postgresql":
            result = conn.execute(self.statement, dict(params))
            return [tuple(row) for row in result] if result.returns_rows else []
        c = self._by_dialect.get(dialect.name) or self._compile(dialect)
        args = c.compiled.construct_params(params)
        for name, default in c.defaults:  # as SQLAlchemy's execution context would
            if name not in params:
                args[name] = default.arg if default.is_scalar else default.arg(None)
        for name, proc in c.binds:
            args[name] = proc(args[name])
        if c.expanding:
            for name in c.expanding:
                del args[name]
            args.update(c.constants)
        fairy = conn.connection
        dbapi = fairy.dbapi_connection
        assert dbapi is not None
        # One cursor per DBAPI connection, kept in the pool entry's ``info`` (which lives as long
        # as that connection): psycopg builds a cursor and its adapters map on every cursor().
        cursor = fairy.info.get(_CURSOR)
        if cursor is None or cursor.closed or cursor.connection is not dbapi:
            cursor = fairy.info[_CURSOR] = dbapi.cursor()
        try:
            cursor.execute(c.sql, args)
            # ``pgresult.nfields``, not ``description``: psycopg builds a Column object per
            # column on every ``description`` read (30 for the turn row), needed only once.
            # A DML statement without RETURNING returns nothing here (SQLAlchemy may have
            # compiled an implicit RETURNING of the primary key into it: ignored).
            result = cursor.pgresult
            returns = c.returns and result is not None and result.nfields
            raw = cursor.fetchall() if returns else []
            procs = c.results
            if raw and procs is None:
                procs = self._result_processors(c, dialect, cursor.description)
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
        if not raw or not procs:
            return raw
        return [
            tuple(v if p is None else p(v) for v, p in zip(row, procs, strict=True)) for row in raw
        ]

    def first(self, bind: Bind, params: Mapping[str, Any]) -> Sequence[Any] | None:
        """The first row, or None."""
        rows = self.rows(bind, params)
        return rows[0] if rows else None

    def scalar(self, bind: Bind, params: Mapping[str, Any]) -> Any:
        """The first column of the first row, or None when there is no row."""
        rows = self.rows(bind, params)
        return rows[0][0] if rows else None


def detached(cls: type[T], row: Sequence[Any]) -> T:
    """A detached instance of the mapped ``cls`` from a row of its table's columns (in table
    order), as the ORM would load it but without its per-row cost."""
    configure_mappers()  # the ORM's first use would (a no-op once done: ~1 µs)
    manager = instrumentation.manager_of_class(cls)
    obj = manager.new_instance()
    names = _COLUMN_NAMES.get(cls)
    if names is None:
        names = _COLUMN_NAMES[cls] = tuple(c.key for c in manager.mapper.columns)
    obj.__dict__.update(zip(names, row, strict=True))
    make_transient_to_detached(obj)
    return obj


_COLUMN_NAMES: dict[type, tuple[str, ...]] = {}
