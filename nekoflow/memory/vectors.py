"""SQL shell of memory embeddings: fill the vectors a scope's live memories lack.

Run by the ``memory`` queue after a turn applied (never on a turn's critical path). Idempotent:
a memory is embedded only while it has no vector from the configured model, and a vector is
stored only if the memory still holds the text it was computed from (a memory restated
meanwhile keeps waiting for its own).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, or_, select

from nekoflow.memory.embeddings import Embedder, pack
from nekoflow.memory.store import RETRIEVED, live_clause
from nekoflow.storage.dialogue import Save, utcnow
from nekoflow.storage.turns import MemoryRecord

__all__ = ["embed_save", "embed_scope", "embedding_text"]


def embedding_text(title: str, content: str) -> str:
    """What is embedded for a memory: its title and content."""
    return f"{title}\n{content}".strip() if title else content


def _pending(
    s: Session, role_id: int, scope_id: str, model: str, now: datetime, limit: int
) -> list[tuple[int, str, str]]:
    """Live memories of the scope without a vector from ``model``, newest first."""
    rows = s.exec(
        select(MemoryRecord.id, MemoryRecord.title, MemoryRecord.content)
        .where(
            live_clause(role_id, scope_id, now, RETRIEVED),
            or_(
                col(MemoryRecord.embedding_model).is_(None),
                col(MemoryRecord.embedding_model) != model,
            ),
        )
        .order_by(col(MemoryRecord.id).desc())
        .limit(limit)
    ).all()
    return [(int(i), t or "", c or "") for i, t, c in rows]


def embed_scope(
    engine: Engine,
    embedder: Embedder,
    role_id: int,
    scope_id: str,
    *,
    batch: int = 32,
    max_batches: int = 16,
) -> int:
    """Embed up to ``batch × max_batches`` of the scope's memories lacking a vector; returns how
    many vectors were stored. Raises :class:`~nekoflow.memory.embeddings.EmbeddingsError` when
    the endpoint fails (the vectors stored before stay)."""
    stored = 0
    for _ in range(max_batches):
        with Session(engine) as s:
            rows = _pending(s, role_id, scope_id, embedder.model, utcnow(), batch)
        if not rows:
            break
        vectors = embedder.embed([embedding_text(t, c) for _, t, c in rows])
        with Session(engine) as s:
            for (mid, title, content), vector in zip(rows, vectors, strict=True):
                res = s.execute(
                    update(MemoryRecord)
                    .where(
                        col(MemoryRecord.id) == mid,
                        col(MemoryRecord.title) == title,
                        col(MemoryRecord.content) == content,
                    )
                    .values(embedding=pack(vector), embedding_model=embedder.model)
                    .execution_options(synchronize_session=False)
                )
                stored += res.rowcount  # type: ignore[attr-defined]
            s.commit()
        if len(rows) < batch:
            break
    return stored


def embed_save(engine: Engine, embedder: Embedder, save_id: int) -> int:
    """:func:`embed_scope` for the character and scope of a save (0 for an unknown save)."""
    with Session(engine) as s:
        save = s.get(Save, save_id)
        if save is None:
            return 0
        role_id, scope_id = save.role_id, save.scope_id
    return embed_scope(engine, embedder, role_id, scope_id)
