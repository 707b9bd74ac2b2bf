"""Long-term memory storage: term statistics for BM25 and the database's full-text index.

``MemoryTermStat`` keeps, per scope token, each term's document frequency (``df``), the number of
memories (term ``""``) and their total length in terms (term ``"#len"``), so BM25 has exact
corpus statistics without scanning a scope's memories. The full-text index over
``memory_record.terms`` is SQLite FTS5 (an external-content table kept in step by triggers) or a
PostgreSQL generated ``tsvector`` column with a GIN index; both are created by
:func:`ensure_memory_index` (run after ``create_all`` and once per engine before retrieval).
"""

from __future__ import annotations

import logging
import threading
import weakref
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import Column, Integer, Text, event, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Field, SQLModel

from nekoflow.storage.dialogue import UTCDateTime

log = logging.getLogger(__name__)

DOCS = ""
"""The pseudo-term whose ``df`` is the number of memories of the scope."""
LENGTH = "#len"
"""The pseudo-term whose ``df`` is the total length (in terms) of the scope's memories."""


class MemoryTermStat(SQLModel, table=True):
    """Document frequency of one index term in one scope (plus the scope's totals)."""

    __tablename__: ClassVar[str] = "memory_term_stat"  # type: ignore[misc]

    scope_key: str = Field(primary_key=True, max_length=32)
    term: str = Field(primary_key=True, max_length=64)
    df: int = 0


class MemoryRound(SQLModel, table=True):
    """A past round of a conversation as a retrieval unit: the user's line(s) of a turn and the
    reply, dated, indexed by the database's full text over ``terms`` (the user's words)."""

    __tablename__: ClassVar[str] = "memory_round"  # type: ignore[misc]

    id: int | None = Field(default=None, primary_key=True)
    role_id: int = Field(foreign_key="role.id", ondelete="CASCADE")
    scope_id: str = Field(max_length=512)
    save_id: int = Field(foreign_key="save.id", ondelete="CASCADE")
    turn_id: str = Field(max_length=128)
    #: The round's first user line (rounds whose line is in the recent window are not repeated).
    line_id: int
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    user_text: str = Field(default="", sa_type=Text)
    reply_text: str = Field(default="", sa_type=Text)
    #: The scope token, then the index terms of the user's words (``lexical.index_text``).
    terms: str | None = Field(default=None, sa_type=Text)
    #: 1 when a fact it stated was forgotten (``memory forget``): never retrieved again.
    hidden: int = Field(default=0, sa_column=Column(Integer, nullable=False, server_default="0"))


def round_stats_key(scope_key: str) -> str:
    """The term-statistics key of a scope's rounds (beside its memories' ``scope_key``)."""
    return f"r{scope_key}"


_SQLITE_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5("
    "terms, content='memory_record', content_rowid='id', tokenize='unicode61 remove_diacritics 0')",
    # Only rows with terms are in the index: a 'delete' must name exactly what was inserted.
    "CREATE TRIGGER IF NOT EXISTS memory_fts_ai AFTER INSERT ON memory_record "
    "WHEN new.terms IS NOT NULL BEGIN "
    "INSERT INTO memory_fts(rowid, terms) VALUES (new.id, new.terms); END",
    "CREATE TRIGGER IF NOT EXISTS memory_fts_ad AFTER DELETE ON memory_record "
    "WHEN old.terms IS NOT NULL BEGIN "
    "INSERT INTO memory_fts(memory_fts, rowid, terms) VALUES ('delete', old.id, old.terms); END",
    "CREATE TRIGGER IF NOT EXISTS memory_fts_au AFTER UPDATE OF terms ON memory_record BEGIN "
    "INSERT INTO memory_fts(memory_fts, rowid, terms) "
    "SELECT 'delete', old.id, old.terms WHERE old.terms IS NOT NULL; "
    "INSERT INTO memory_fts(rowid, terms) SELECT new.id, new.terms WHERE new.terms IS NOT NULL; "
    "END",
)
_SQLITE_ROUND_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS round_fts USING fts5("
    "terms, content='memory_round', content_rowid='id', tokenize='unicode61 remove_diacritics 0')",
    "CREATE TRIGGER IF NOT EXISTS round_fts_ai AFTER INSERT ON memory_round "
    "WHEN new.terms IS NOT NULL BEGIN "
    "INSERT INTO round_fts(rowid, terms) VALUES (new.id, new.terms); END",
    "CREATE TRIGGER IF NOT EXISTS round_fts_ad AFTER DELETE ON memory_round "
    "WHEN old.terms IS NOT NULL BEGIN "
    "INSERT INTO round_fts(round_fts, rowid, terms) VALUES ('delete', old.id, old.terms); END",
)
_PG_ROUND_DDL = (
    "ALTER TABLE memory_round ADD COLUMN IF NOT EXISTS terms_tsv tsvector GENERATED ALWAYS AS "
    "(to_tsvector('simple', coalesce(terms, ''))) STORED",
    "CREATE INDEX IF NOT EXISTS ix_round_terms_tsv ON memory_round USING gin (terms_tsv)",
)
_COMMON_ROUND_DDL = (
    "CREATE INDEX IF NOT EXISTS ix_round_scope_time ON memory_round "
    "(role_id, scope_id, created_at)",
    "CREATE INDEX IF NOT EXISTS ix_round_turn ON memory_round (role_id, scope_id, turn_id)",
)
_PG_DDL = (
    "ALTER TABLE memory_record ADD COLUMN IF NOT EXISTS terms_tsv tsvector GENERATED ALWAYS AS "
    "(to_tsvector('simple', coalesce(terms, ''))) STORED",
    "CREATE INDEX IF NOT EXISTS ix_memory_terms_tsv ON memory_record USING gin (terms_tsv)",
)
_COMMON_DDL = (
    "CREATE INDEX IF NOT EXISTS ix_memory_rank ON memory_record "
    "(role_id, scope_id, importance, created_at)",
    "CREATE INDEX IF NOT EXISTS ix_memory_used ON memory_record "
    "(role_id, scope_id, last_accessed_at)",
    "CREATE INDEX IF NOT EXISTS ix_memory_fact_key ON memory_record (role_id, scope_id, fact_key)",
    "CREATE INDEX IF NOT EXISTS ix_memory_kind ON memory_record (role_id, scope_id, kind, id)",
    # The memories still waiting for their vector (or embedded by another model).
    "CREATE INDEX IF NOT EXISTS ix_memory_embedding ON memory_record "
    "(role_id, scope_id, embedding_model, id)",
    # A summary is keyed by its span: a retried summary task cannot write a second one.
    "CREATE UNIQUE INDEX IF NOT EXISTS ux_memory_summary_span ON memory_record "
    "(role_id, scope_id, span_from_line)",
)
_NEEDED = {"terms", "kind", "fact_key", "last_accessed_at", "span_from_line"}

_ready: weakref.WeakSet[Engine] = weakref.WeakSet()
_lock = threading.Lock()


def _create(conn: Connection) -> bool:
    """Run the index DDL on ``conn`` when memory_record has its memory columns; True if it did."""
    insp = inspect(conn)
    if "memory_record" not in insp.get_table_names():
        return False
    have = {c["name"] for c in insp.get_columns("memory_record")}
    if not have >= _NEEDED:
        return False  # an older table: add_missing_columns runs next; ensure_memory_index later
    dialect = conn.dialect.name
    ddl = _SQLITE_DDL if dialect == "sqlite" else _PG_DDL if dialect == "postgresql" else ()
    for stmt in (*ddl, *_COMMON_DDL):
        conn.execute(text(stmt))
    if "memory_round" in insp.get_table_names():
        rounds = (
            _SQLITE_ROUND_DDL
            if dialect == "sqlite"
            else _PG_ROUND_DDL
            if dialect == "postgresql"
            else ()
        )
        for stmt in (*rounds, *_COMMON_ROUND_DDL):
            conn.execute(text(stmt))
    return True


@event.listens_for(SQLModel.metadata, "after_create")
def _after_create(target: Any, connection: Connection, **kw: Any) -> None:
    _create(connection)


def ensure_memory_index(engine: Engine) -> None:
    """Create the full-text index and memory indexes if missing (idempotent, once per engine)."""
    if engine in _ready:
        return
    with _lock:
        if engine in _ready:
            return
        with engine.begin() as conn:
            if not _create(conn):
                log.warning("memory_record lacks its memory columns; run create_all first")
                return
        _ready.add(engine)
