"""SQL side of the bulk re-review: selecting saves, jobs and batches, loading active paths and
turn runs, bulk-writing records, progress and results.

Records are written in bulk with ``INSERT … ON CONFLICT DO NOTHING`` (PostgreSQL: ``COPY`` into a
temporary table first, then one ``INSERT … SELECT``), in the same transaction that marks the
batch done.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import func, or_, select, text, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from nekoflow.errors import InputError
from nekoflow.memory.history import load_history_rows
from nekoflow.rereview.core import RunInfo, run_info
from nekoflow.storage.dialogue import Line, Role, Save, utcnow
from nekoflow.storage.rereview import JobStatus, ReviewBatch, ReviewJob, ReviewRecord
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.characters import initial_relationship

RECORD_COLUMNS: tuple[str, ...] = tuple(c.name for c in ReviewRecord.__table__.columns)  # type: ignore[attr-defined]


class JobFilters(BaseModel):
    """Which conversations (saves) a job re-reviews; empty lists mean "any".

    ``since``/``until`` select conversations active in the window (created before ``until``,
    last written at or after ``since``); a selected conversation is always re-reviewed whole,
    because the replay starts from the relationship's initial state.
    """

    model_config = ConfigDict(extra="forbid")

    characters: list[str] = Field(default_factory=list)
    scopes: list[str] = Field(default_factory=list)
    channels: list[str] = Field(default_factory=list)
    since: datetime | None = None
    until: datetime | None = None
    save_ids: list[int] = Field(default_factory=list)


def _role_ids(s: Session, characters: Sequence[str]) -> list[int]:
    ids: list[int] = []
    for ref in characters:
        text_ref = str(ref).strip()
        stmt = select(Role.id).where(
            or_(col(Role.name) == text_ref, col(Role.id) == int(text_ref))
            if text_ref.isdigit()
            else col(Role.name) == text_ref
        )
        found = [int(r) for r in s.scalars(stmt).all()]
        if not found:
            raise InputError(f"no character {ref!r}", field="character")
        ids += found
    return ids


def select_saves(s: Session, filters: JobFilters) -> Any:
    """A SELECT of (save id, role id, scope id) for the saves the filters choose."""
    stmt = select(col(Save.id), col(Save.role_id), col(Save.scope_id)).where(
        col(Save.last_message_id).is_not(None)
    )
    if filters.characters:
        stmt = stmt.where(col(Save.role_id).in_(_role_ids(s, filters.characters)))
    if filters.scopes:
        stmt = stmt.where(
            or_(
                *(
                    col(Save.scope_id).like(sc.replace("*", "%"))
                    if "*" in sc
                    else col(Save.scope_id) == sc
                    for sc in filters.scopes
                )
            )
        )
    if filters.channels:
        stmt = stmt.where(or_(*(col(Save.scope_id).like(f"{ch}:%") for ch in filters.channels)))
    if filters.since is not None:
        stmt = stmt.where(col(Save.updated_at) >= filters.since)
    if filters.until is not None:
        stmt = stmt.where(col(Save.created_at) < filters.until)
    if filters.save_ids:
        stmt = stmt.where(col(Save.id).in_(filters.save_ids))
    return stmt.order_by(col(Save.id))


def plan_batches(sizes: Sequence[tuple[int, int]], batch_size: int) -> list[tuple[list[int], int]]:
    """Group (save id, estimated turns) into batches of about ``batch_size`` turns (whole saves)."""
    batches: list[tuple[list[int], int]] = []
    ids: list[int] = []
    total = 0
    for save_id, n in sizes:
        ids.append(save_id)
        total += n
        if total >= batch_size:
            batches.append((ids, total))
            ids, total = [], 0
    if ids:
        batches.append((ids, total))
    return batches


def create_job(
    engine: Engine,
    filters: JobFilters,
    *,
    mode: str,
    version: str,
    batch_size: int,
    dry_run: bool = False,
    apply: bool = False,
) -> ReviewJob:
    """Create a job and its batches (saves in id order, about ``batch_size`` turns each)."""
    if batch_size < 1:
        raise InputError("batch_size must be at least 1", field="batch_size")
    with Session(engine, expire_on_commit=False) as s:
        chosen = select_saves(s, filters).subquery()
        # user lines per save (all branches): an upper bound of its turns, for sizing and ETA
        counts = (
            select(col(Line.save_id), func.count().label("n"))
            .where(col(Line.attribute) == "user")
            .where(col(Line.save_id).in_(select(chosen.c.id)))
            .group_by(col(Line.save_id))
            .subquery()
        )
        rows = s.execute(
            select(chosen.c.id, func.coalesce(counts.c.n, 0))
            .outerjoin(counts, counts.c.save_id == chosen.c.id)
            .order_by(chosen.c.id)
        ).all()
        sizes = [(int(r[0]), int(r[1])) for r in rows]
        plan = plan_batches(sizes, batch_size)
        job = ReviewJob(
            mode=mode,
            reviewer_version=version,
            filters=filters.model_dump(mode="json"),
            batch_size=batch_size,
            dry_run=dry_run,
            apply=apply,
            batches=len(plan),
            saves=len(sizes),
            estimated_turns=sum(n for _, n in sizes),
            status=JobStatus.running if plan else JobStatus.done,
            finished_at=None if plan else utcnow(),
        )
        s.add(job)
        s.flush()
        assert job.id is not None
        s.add_all(
            ReviewBatch(job_id=job.id, batch_no=i, save_ids=ids, estimated_turns=n)
            for i, (ids, n) in enumerate(plan)
        )
        s.commit()
        return job


def get_job(engine: Engine, job_id: int) -> ReviewJob:
    """The job, or InputError when there is none."""
    with Session(engine, expire_on_commit=False) as s:
        job = s.get(ReviewJob, job_id)
    if job is None:
        raise InputError(f"no re-review job {job_id}", field="job_id")
    return job


def pending_batches(engine: Engine, job_id: int, *, only_pending: bool = False) -> list[int]:
    """Batch numbers of the job that are not done (pending, running or failed), in order;
    ``only_pending``: those no worker has started."""
    status = col(ReviewBatch.status)
    cond = status == JobStatus.pending if only_pending else status != JobStatus.done
    with Session(engine) as s:
        rows = s.scalars(
            select(col(ReviewBatch.batch_no))
            .where(col(ReviewBatch.job_id) == job_id, cond)
            .order_by(col(ReviewBatch.batch_no))
        ).all()
    return [int(r) for r in rows]


def restart_job(engine: Engine, job_id: int) -> None:
    """Mark a job running again (for ``--resume``); its not-done batches become pending."""
    with Session(engine) as s:
        s.execute(
            update(ReviewJob)
            .where(col(ReviewJob.id) == job_id)
            .values(status=JobStatus.running, error=None, finished_at=None)
        )
        s.execute(
            update(ReviewBatch)
            .where(col(ReviewBatch.job_id) == job_id, col(ReviewBatch.status) != JobStatus.done)
            .values(status=JobStatus.pending, error=None)
        )
        s.commit()
    finish_if_complete(engine, job_id)  # a job whose batches are all done already is finished


def load_batch(s: Session, job_id: int, batch_no: int) -> ReviewBatch | None:
    """The batch row, or None."""
    return s.get(ReviewBatch, (job_id, batch_no))


def load_saves(
    s: Session, save_ids: Sequence[int]
) -> list[tuple[int, int, str, dict[str, int], list[Any]]]:
    """For each save: (id, role id, scope id, the role's initial relationship, active path).

    The active path is :func:`nekoflow.memory.history.load_history_rows` — one recursive-CTE
    query per save, light rows root first.
    """
    rows = s.execute(
        select(Save.id, Save.role_id, Save.scope_id, Role)
        .join(Role, col(Role.id) == col(Save.role_id))
        .where(col(Save.id).in_(list(save_ids)))
        .order_by(col(Save.id))
    ).all()
    out = []
    for save_id, role_id, scope_id, role in rows:
        path = load_history_rows(s, save_id)
        out.append((int(save_id), int(role_id), str(scope_id), initial_relationship(role), path))
    return out


def load_runs(s: Session, turn_ids: Sequence[str]) -> dict[str, RunInfo]:
    """RunInfo (choice, channel, user, group) of the given turn ids that have a TurnRun."""
    found: dict[str, RunInfo] = {}
    ids = sorted(set(turn_ids))
    for start in range(0, len(ids), 1000):
        chunk = ids[start : start + 1000]
        rows = s.execute(
            select(TurnRun.turn_id, TurnRun.request, TurnRun.context, TurnRun.channel).where(
                col(TurnRun.turn_id).in_(chunk)
            )
        ).all()
        for turn_id, request, context, channel in rows:
            found[turn_id] = run_info(request, context, channel)
    return found


def _pg_copy_insert(s: Session, records: Sequence[dict[str, Any]]) -> int:
    """PostgreSQL: COPY into a temporary table, then INSERT … SELECT … ON CONFLICT DO NOTHING."""
    import json

    conn = s.connection()
    conn.exec_driver_sql(
        "CREATE TEMP TABLE IF NOT EXISTS rr_stage "
        "(LIKE review_record INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
    )
    raw: Any = conn.connection.driver_connection
    names = ", ".join(RECORD_COLUMNS)
    with raw.cursor() as cur, cur.copy(f"COPY rr_stage ({names}) FROM STDIN") as copy:
        for rec in records:
            copy.write_row(
                [
                    json.dumps(rec[c], ensure_ascii=False) if c == "output" else rec[c]
                    for c in RECORD_COLUMNS
                ]
            )
    result: Any = conn.exec_driver_sql(
        f"INSERT INTO review_record ({names}) SELECT {names} FROM rr_stage ON CONFLICT DO NOTHING"
    )
    written = int(result.rowcount)
    conn.exec_driver_sql("TRUNCATE rr_stage")
    return written


def _generic_insert(s: Session, records: Sequence[dict[str, Any]]) -> int:
    """Any other database (SQLite): one executemany of INSERT … ON CONFLICT DO NOTHING."""
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    table: Any = ReviewRecord.__table__
    written = 0
    for start in range(0, len(records), 500):
        chunk = records[start : start + 500]
        result: Any = s.execute(sqlite_insert(table).values(list(chunk)).on_conflict_do_nothing())
        written += max(0, int(result.rowcount))
    return written


def insert_records(s: Session, records: Sequence[dict[str, Any]]) -> int:
    """Bulk-insert records, skipping ones that exist (same turn key and version); rows written."""
    if not records:
        return 0
    if s.get_bind().dialect.name == "postgresql":
        return _pg_copy_insert(s, records)
    return _generic_insert(s, records)


def _finish_if_complete(s: Session, job_id: int) -> None:
    """Mark the job done when none of its batches is left (atomic; safe from many workers)."""
    left = (
        select(ReviewBatch.batch_no)
        .where(col(ReviewBatch.job_id) == job_id, col(ReviewBatch.status) != JobStatus.done)
        .exists()
    )
    s.execute(
        update(ReviewJob)
        .where(col(ReviewJob.id) == job_id, col(ReviewJob.status) == JobStatus.running, ~left)
        .values(status=JobStatus.done, finished_at=utcnow())
    )


def start_batch(engine: Engine, job_id: int, batch_no: int) -> None:
    """Mark a pending batch running (a worker has picked it up)."""
    with Session(engine) as s:
        s.execute(
            update(ReviewBatch)
            .where(
                col(ReviewBatch.job_id) == job_id,
                col(ReviewBatch.batch_no) == batch_no,
                col(ReviewBatch.status) == JobStatus.pending,
            )
            .values(status=JobStatus.running)
        )
        s.commit()


def finish_batch(s: Session, job_id: int, batch_no: int, tally: dict[str, Any]) -> bool:
    """Mark the batch done with its tally (in the caller's transaction); False when another run of
    the batch finished it first. Call :func:`finish_if_complete` after the commit."""
    result: Any = s.execute(
        update(ReviewBatch)
        .where(
            col(ReviewBatch.job_id) == job_id,
            col(ReviewBatch.batch_no) == batch_no,
            col(ReviewBatch.status) != JobStatus.done,
        )
        .values(status=JobStatus.done, done_at=utcnow(), error=None, **tally)
    )
    return bool(result.rowcount)


def finish_if_complete(engine: Engine, job_id: int) -> None:
    """Mark the job done when all its batches are. Run after a batch commits (in a transaction of
    its own): concurrent last batches cannot both miss each other's done mark, as they could inside
    their own transactions."""
    with Session(engine) as s:
        _finish_if_complete(s, job_id)
        s.commit()


def fail_batch(engine: Engine, job_id: int, batch_no: int, error: str) -> None:
    """Record a batch failure (the job stays resumable)."""
    with Session(engine) as s:
        s.execute(
            update(ReviewBatch)
            .where(
                col(ReviewBatch.job_id) == job_id,
                col(ReviewBatch.batch_no) == batch_no,
                col(ReviewBatch.status) != JobStatus.done,
            )
            .values(status=JobStatus.failed, error=error[:2000])
        )
        s.commit()


class Progress(BaseModel):
    """A job's progress as read from the database."""

    status: str
    batches: int
    batches_done: int
    batches_failed: int
    batches_running: int = 0
    turns_done: int
    estimated_turns: int
    error: str | None = None


def progress(engine: Engine, job_id: int) -> Progress:
    """How far the job is (one small aggregate query; the CLI polls it)."""
    with Session(engine) as s:
        job = s.get(ReviewJob, job_id)
        if job is None:
            raise InputError(f"no re-review job {job_id}", field="job_id")
        done, failed, running, turns, est_done, err = s.execute(
            select(
                func.count().filter(col(ReviewBatch.status) == JobStatus.done),
                func.count().filter(col(ReviewBatch.status) == JobStatus.failed),
                func.count().filter(col(ReviewBatch.status) == JobStatus.running),
                func.coalesce(func.sum(ReviewBatch.turns), 0),
                func.coalesce(
                    func.sum(ReviewBatch.estimated_turns).filter(
                        col(ReviewBatch.status) == JobStatus.done
                    ),
                    0,
                ),
                func.max(ReviewBatch.error),
            ).where(col(ReviewBatch.job_id) == job_id)
        ).one()
    # once done, the estimate is replaced by the real count for finished batches
    estimate = int(job.estimated_turns) - int(est_done) + int(turns)
    return Progress(
        status=job.status,
        batches=job.batches,
        batches_done=int(done),
        batches_failed=int(failed),
        batches_running=int(running),
        turns_done=int(turns),
        estimated_turns=max(estimate, int(turns)),
        error=job.error or err,
    )


def done_batches(engine: Engine, job_id: int) -> list[ReviewBatch]:
    """The job's finished batches (their tallies and per-save summaries)."""
    with Session(engine, expire_on_commit=False) as s:
        return list(
            s.scalars(
                select(ReviewBatch)
                .where(col(ReviewBatch.job_id) == job_id, col(ReviewBatch.status) == JobStatus.done)
                .order_by(col(ReviewBatch.batch_no))
            ).all()
        )


def job_save_ids(engine: Engine, job_id: int) -> list[int]:
    """Every save of the job, in order."""
    with Session(engine) as s:
        lists = s.scalars(
            select(ReviewBatch.save_ids)
            .where(col(ReviewBatch.job_id) == job_id)
            .order_by(col(ReviewBatch.batch_no))
        ).all()
    return [int(i) for ids in lists for i in ids]


def iter_records(
    engine: Engine, save_ids: Sequence[int], version: str, chunk: int = 200
) -> Iterator[ReviewRecord]:
    """The records of these saves under ``version``, save by save in turn order (streamed)."""
    for start in range(0, len(save_ids), chunk):
        ids = list(save_ids[start : start + chunk])
        with Session(engine) as s:
            stmt = (
                select(ReviewRecord)
                .where(
                    col(ReviewRecord.save_id).in_(ids),
                    col(ReviewRecord.reviewer_version) == version,
                )
                .order_by(col(ReviewRecord.save_id), col(ReviewRecord.seq))
                .execution_options(yield_per=2000)
            )
            yield from s.scalars(stmt)


def set_job_error(engine: Engine, job_id: int, error: str) -> None:
    """Mark the job failed with a reason."""
    with Session(engine) as s:
        s.execute(
            update(ReviewJob)
            .where(col(ReviewJob.id) == job_id)
            .values(status=JobStatus.failed, error=error[:2000])
        )
        s.commit()


def mark_applied(engine: Engine, job_id: int) -> None:
    """Stamp the job's apply time."""
    with Session(engine) as s:
        s.execute(update(ReviewJob).where(col(ReviewJob.id) == job_id).values(applied_at=utcnow()))
        s.commit()


def pg_analyze(engine: Engine) -> None:
    """Refresh planner statistics after bulk loads (PostgreSQL only; a no-op elsewhere)."""
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            conn.execute(text("ANALYZE review_record"))
