"""``--apply``: replay re-reviewed deltas from each relationship's initial state and rewrite the
relationship, memories and plot nodes the re-review changed — one transaction per (role, scope).

Memories and plot nodes belong to a historical turn by ``turn_id`` (the live turn's id, or
``rereview:{save_id}:{line_id}`` for imported history without one). For each turn whose
re-reviewed rows differ from the stored ones, the stored rows are deleted and the new ones written
(stamped with the turn's send time; ``expires_at`` = send time + the ttl, as a live turn at that
time would have set it). Unchanged turns keep their rows. Memories and plot nodes not tied to a
turn, world-book suggestions and the apply-once ledger are left alone.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import delete, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.memory.store import remove_rows, write_memories
from nekoflow.rereview import store
from nekoflow.rereview.core import Replay
from nekoflow.review.models import RELATIONSHIP_DIMENSIONS, ReviewOutput
from nekoflow.settings import Settings
from nekoflow.storage.dialogue import Role, Save, utcnow
from nekoflow.storage.rereview import ReviewJob, ReviewRecord
from nekoflow.storage.turns import MemoryRecord, PlotNode, Relationship
from nekoflow.turns.characters import initial_relationship
from nekoflow.turns.effects import memory_rows, plot_rows


class ScopeDiff(BaseModel):
    """Old vs new relationship of one character in one scope."""

    role_id: int
    role_name: str
    scope_id: str
    old: dict[str, int]
    new: dict[str, int]
    turns: int


class ApplySummary(BaseModel):
    """What ``--apply`` rewrote."""

    scopes: int = 0
    relationships_changed: int = 0
    memories_written: int = 0
    memories_deleted: int = 0
    plots_written: int = 0
    plots_deleted: int = 0
    missing_records: int = 0
    diffs: list[ScopeDiff] = Field(default_factory=list)


def tag(rec: ReviewRecord) -> str:
    """The turn_id memories and plot nodes of this record's turn carry."""
    return rec.turn_id or f"rereview:{rec.save_id}:{rec.line_id}"


def _state(rel: Relationship | None, role: Role | None) -> dict[str, int]:
    if rel is None:
        return initial_relationship(role) if role is not None else {}
    return {d: getattr(rel, d) for d in RELATIONSHIP_DIMENSIONS}


def _mem_sig(m: MemoryRecord) -> tuple[Any, ...]:
    return (m.target, m.mem_type, m.title, m.content, round(m.importance, 6), m.ttl)


def _plot_sig(p: PlotNode) -> tuple[Any, ...]:
    return (p.level, p.title, p.summary)


def _rewrite(
    s: Session, model: Any, stored: list[Any], new: list[Any], sig: Any
) -> tuple[int, int]:
    """Replace ``stored`` by ``new`` when they differ; (written, deleted)."""
    if sorted(map(sig, stored)) == sorted(map(sig, new)):
        return 0, 0
    if stored:
        s.execute(delete(model).where(col(model.id).in_([row.id for row in stored])))
    s.add_all(new)
    return len(new), len(stored)


def _scope_sig(s: Session, save: Save) -> list[tuple[Any, ...]]:
    """The scope's facts as consolidation left them (what a rebuild must reproduce)."""
    rows = s.scalars(
        select(MemoryRecord).where(
            col(MemoryRecord.role_id) == save.role_id,
            col(MemoryRecord.scope_id) == save.scope_id,
            col(MemoryRecord.kind) == "fact",
        )
    )
    return sorted((*_mem_sig(m), m.turn_id, m.superseded_by is not None) for m in rows)


def _rebuild_memories(
    s: Session,
    save: Save,
    records: list[ReviewRecord],
    stored: dict[str, list[MemoryRecord]],
    settings: Settings,
) -> tuple[int, int]:
    """Rebuild the memories of the replayed turns: delete theirs, consolidate the re-reviewed
    ones in turn order (each at its turn's send time); kept only if the result differs from
    what is stored (a savepoint is rolled back otherwise). (written, deleted)."""
    before = _scope_sig(s, save)
    old = [m for rows in stored.values() for m in rows if m.kind == "fact"]
    nested = s.begin_nested()
    gone = [m.id for m in old if m.id is not None]
    if gone:  # what the removed memories superseded is live again until the rebuild decides
        s.execute(
            update(MemoryRecord)
            .where(col(MemoryRecord.superseded_by).in_(gone), col(MemoryRecord.id).not_in(gone))
            .values(superseded_by=None, superseded_at=None)
            .execution_options(synchronize_session="fetch")
        )
    remove_rows(s, old)
    written = 0
    for rec in records:
        out = ReviewOutput.model_validate(rec.output)
        rows = memory_rows(
            out,
            role_id=rec.role_id,
            scope_id=rec.scope_id,
            turn_id=tag(rec),
            at=rec.sent_at,
            settings=settings,
        )
        written += write_memories(s, rows, now=rec.sent_at, settings=settings).added
    if _scope_sig(s, save) == before:
        nested.rollback()
        return 0, 0
    nested.commit()
    return written, len(old)


def _by_tag(s: Session, model: Any, save: Save, tags: set[str]) -> defaultdict[str, list[Any]]:
    """The scope's rows of ``model`` (memories or plot nodes) that belong to these turns."""
    found: defaultdict[str, list[Any]] = defaultdict(list)
    rows = s.scalars(
        select(model).where(
            col(model.role_id) == save.role_id,
            col(model.scope_id) == save.scope_id,
            col(model.turn_id).is_not(None),
        )
    )
    for row in rows:
        if row.turn_id in tags:
            found[row.turn_id].append(row)
    return found


def apply_save(
    engine: Engine, save_id: int, version: str, settings: Settings, summary: ApplySummary
) -> None:
    """Replay and rewrite one (role, scope) in one transaction."""
    with Session(engine) as s:
        save = s.get(Save, save_id)
        if save is None:
            return
        role = s.get(Role, save.role_id)
        records = list(
            s.scalars(
                select(ReviewRecord)
                .where(
                    col(ReviewRecord.save_id) == save_id,
                    col(ReviewRecord.reviewer_version) == version,
                )
                .order_by(col(ReviewRecord.seq))
            ).all()
        )
        if not records:
            summary.missing_records += 1
            return
        replay = Replay.start(initial_relationship(role) if role is not None else {})
        for rec in records:
            replay.apply(
                {d: getattr(rec, d) for d in RELATIONSHIP_DIMENSIONS} if rec.has_delta else None
            )
        rel = s.get(Relationship, (save.role_id, save.scope_id), with_for_update=True)
        old = _state(rel, role)
        if rel is None:
            rel = Relationship(role_id=save.role_id, scope_id=save.scope_id)
        for dim in RELATIONSHIP_DIMENSIONS:
            setattr(rel, dim, replay.state[dim])
        rel.turns = replay.turns
        rel.updated_at = utcnow()
        s.add(rel)
        summary.relationships_changed += old != replay.state
        summary.diffs.append(
            ScopeDiff(
                role_id=save.role_id,
                role_name=role.name if role is not None else str(save.role_id),
                scope_id=save.scope_id,
                old=old,
                new=dict(replay.state),
                turns=replay.turns,
            )
        )
        tags = {tag(r) for r in records}
        mems: dict[str, list[MemoryRecord]] = _by_tag(s, MemoryRecord, save, tags)
        plots: dict[str, list[PlotNode]] = _by_tag(s, PlotNode, save, tags)
        w, d = _rebuild_memories(s, save, records, mems, settings)
        summary.memories_written += w
        summary.memories_deleted += d
        for rec in records:
            out = ReviewOutput.model_validate(rec.output)
            where = {
                "role_id": rec.role_id,
                "scope_id": rec.scope_id,
                "turn_id": tag(rec),
                "at": rec.sent_at,
            }
            new_plots = plot_rows(out, **where)
            w, d = _rewrite(s, PlotNode, plots[tag(rec)], new_plots, _plot_sig)
            summary.plots_written += w
            summary.plots_deleted += d
        s.commit()
    summary.scopes += 1


def apply_job(engine: Engine, job: ReviewJob, settings: Settings) -> ApplySummary:
    """Apply every (role, scope) of a finished job, one transaction each."""
    assert job.id is not None
    summary = ApplySummary()
    for save_id in store.job_save_ids(engine, job.id):
        apply_save(engine, save_id, job.reviewer_version, settings, summary)
    store.mark_applied(engine, job.id)
    return summary


def scope_diffs(engine: Engine, job: ReviewJob) -> list[ScopeDiff]:
    """Dry run: each scope's current relationship vs the re-reviewed replay (from the batches)."""
    assert job.id is not None
    diffs = []
    batches = store.done_batches(engine, job.id)
    with Session(engine) as s:
        roles = {r.id: r for r in s.scalars(select(Role))}
        for batch in batches:
            for info in batch.scopes.values():
                role = roles.get(info["role_id"])
                rel = s.get(Relationship, (info["role_id"], info["scope_id"]))
                diffs.append(
                    ScopeDiff(
                        role_id=info["role_id"],
                        role_name=role.name if role is not None else str(info["role_id"]),
                        scope_id=info["scope_id"],
                        old=_state(rel, role),
                        new=info["state"],
                        turns=info["turns"],
                    )
                )
    return diffs
