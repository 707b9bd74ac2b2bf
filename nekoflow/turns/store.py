"""SQL side of a turn's life: creating the run, per-scope order, finishing (results: stage_store).

Per-scope order lives in the database, so it needs nothing but SQL (the embedded demo runs on
SQLite) and survives a broker restart: each turn of a scope gets the next ``seq``; a turn may
start only when every earlier turn of its scope has finished; whoever finishes a turn hands the
scope to the next queued one. ``claim`` is one conditional UPDATE, so two deliveries of the same
turn cannot both move it from queued to running.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, case, func, insert, or_, update
from sqlalchemy import select as sa_select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from nekoflow.storage import read_session
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.fastsql import Bind, FastStatement, detached, dialect_name
from nekoflow.storage.turns import (
    FINISHED,
    ScopeCounter,
    TurnRun,
    TurnStatus,
)
from nekoflow.turns.stage_store import ASYNC_COMMIT as ASYNC_COMMIT
from nekoflow.turns.stage_store import RUN_COLUMNS, run_from_row
from nekoflow.turns.stage_store import STAGE_COUNTED as STAGE_COUNTED
from nekoflow.turns.stage_store import STAGE_RUN as STAGE_RUN
from nekoflow.turns.stage_store import count_stage_run as count_stage_run
from nekoflow.turns.stage_store import get_stage as get_stage
from nekoflow.turns.stage_store import load_turn as load_turn
from nekoflow.turns.stage_store import load_turn_in as load_turn_in
from nekoflow.turns.stage_store import put_stage as put_stage
from nekoflow.turns.stage_store import stage_runs as stage_runs

_RUN_TABLE: Any = TurnRun.__table__  # type: ignore[attr-defined]


def _next_seq_statement(dialect: str) -> Any:
    """Upsert of the scope's counter (``p_scope``) returning its new value: a scope without a
    counter yet (new, or from before counters existed) starts after its highest stored seq."""
    counter: Any = ScopeCounter.__table__  # type: ignore[attr-defined]
    ins: Any = (pg_insert if dialect == "postgresql" else sqlite_insert)(counter)
    scope = bindparam("p_scope", type_=counter.c.scope_id.type)
    first = (
        sa_select(func.coalesce(func.max(_RUN_TABLE.c.seq), 0) + 1)
        .where(_RUN_TABLE.c.scope_id == scope)
        .scalar_subquery()
    )
    return (
        ins.values(scope_id=scope, last_seq=first)
        .on_conflict_do_update(
            index_elements=["scope_id"], set_={"last_seq": counter.c.last_seq + 1}
        )
        .returning(counter.c.last_seq)
    )


_NEXT_SEQ = {d: FastStatement(_next_seq_statement(d)) for d in ("postgresql", "sqlite")}
"""Built once per dialect: building it on every enqueue cost more than running it."""


def next_seq(session: Bind, scope_id: str) -> int:
    """Take the scope's next sequence number (an upsert that locks the scope's counter row
    until the caller's transaction ends; rolled back with it)."""
    return int(_NEXT_SEQ[dialect_name(session)].scalar(session, {"p_scope": scope_id}))


def insert_run(session: Bind, run: TurnRun, seq: int | None, *, claim_publish: bool) -> TurnRun:
    """Insert ``run`` in the caller's transaction, with ``seq`` (the scope's next, taken by
    :func:`next_seq`; None: the turn is not ordered, its own ``seq`` is kept), and return the
    row (detached, as if loaded; ``run`` itself is not changed). IntegrityError on a duplicate.

    ``claim_publish`` (the caller holds the scope's lock, taken by :func:`next_seq`): the
    turn's first publication is claimed (``publishes = 1``) when no earlier turn of its scope is
    unfinished, in the same statement. Whoever finishes the scope's running turn takes the same
    lock before it looks for the next turn (:func:`claim_next_in`), so exactly one of them
    publishes it."""
    values = run.model_dump()  # the row as plain values: no second validation
    if seq is not None:
        values["seq"] = seq
    values["publishes"] = _INSERT_RUN[claim_publish and seq is not None].scalar(session, values)
    return detached(TurnRun, [values[name] for name in RUN_COLUMNS])


def _insert_run(claiming: bool) -> FastStatement:
    """A new turn row, every column given as a bind parameter named as the column (built
    once: the ORM's unit of work costs more), returning ``publishes``. ``claiming``: instead of
    the given value, ``publishes`` is 1 when no earlier turn of its scope is unfinished, else 0
    (see :func:`insert_run`)."""
    values = {n: bindparam(n, type_=_RUN_TABLE.c[n].type) for n in RUN_COLUMNS}
    if claiming:
        blocked = _earlier_unfinished(values["scope_id"], values["seq"])
        values["publishes"] = case((blocked, 0), else_=1)
    return FastStatement(insert(_RUN_TABLE).values(values).returning(_RUN_TABLE.c.publishes))


def create_turn_run(
    engine: Engine, run: TurnRun, *, claim_publish: bool = False
) -> tuple[TurnRun, bool]:
    """Insert ``run``, giving it the next ``seq`` of its scope; returns (row, created).

    When ``run.dedupe_key`` matches an existing turn (the platform redelivered the same message),
    nothing is inserted and the existing row comes back with ``created=False``.
    ``claim_publish``: in the same transaction, claim the turn's first publication when it is
    next in its scope (``row.publishes == 1`` then: the caller publishes it).
    """
    # No read first: the dedupe key's unique constraint decides (a redelivery is rare; the
    # insert that fails on it rolls back, seq included, and the stored turn is read then).
    with engine.connect() as s:
        seq = None
        if run.scope_id is not None and run.status == TurnStatus.queued:
            seq = next_seq(s, run.scope_id)  # the scope's lock, until the commit
        try:
            row = insert_run(s, run, seq, claim_publish=claim_publish)
            s.commit()
            return row, True
        except IntegrityError:
            s.rollback()  # the same message, enqueued before or concurrently: theirs stands
            if not run.dedupe_key:
                raise
    with Session(engine, expire_on_commit=False) as s:
        existing = s.exec(select(TurnRun).where(TurnRun.dedupe_key == run.dedupe_key)).first()
        if existing is None:
            raise RuntimeError(f"turn {run.turn_id!r} could not be inserted")
        return existing, False


def get_run(engine: Engine, turn_id: str) -> TurnRun | None:
    """The TurnRun row, or None."""
    with read_session(engine) as s:
        return s.get(TurnRun, turn_id)


def blocking_predecessor(session: Bind, run: TurnRun) -> TurnRun | None:
    """The earliest unfinished turn of the same scope that arrived before ``run``, if any."""
    if run.scope_id is None or run.seq is None:
        return None
    row = _PREDECESSOR.first(session, {"p_scope": run.scope_id, "p_seq": run.seq})
    return None if row is None else run_from_row(row)


_PREDECESSOR = FastStatement(
    sa_select(*_RUN_TABLE.c)
    .where(
        _RUN_TABLE.c.scope_id == bindparam("p_scope"),
        _RUN_TABLE.c.seq < bindparam("p_seq"),
        _RUN_TABLE.c.status.not_in(sorted(FINISHED)),
    )
    .order_by(_RUN_TABLE.c.seq)
    .limit(1)
)
_RUN_ROW = FastStatement(sa_select(*_RUN_TABLE.c).where(_RUN_TABLE.c.turn_id == bindparam("p_id")))


def claim(engine: Engine, turn_id: str) -> str:
    """Try to start a turn: returns ``"claimed"``, ``"running"`` (already started — a
    redelivery), ``"blocked"`` (an earlier turn of the scope is unfinished), ``"waiting"``
    (its merge debounce window is open: ``not_before``) or ``"finished"``.
    """
    return claim_run(engine, turn_id)[0]


def _earlier_unfinished(scope: Any, seq: Any) -> Any:
    """EXISTS an unfinished turn of ``scope`` before ``seq`` — values, or the columns of the
    turn row an UPDATE is deciding about (the subquery correlates to it)."""
    earlier = _RUN_TABLE.alias("earlier")
    return (
        sa_select(earlier.c.turn_id)
        .where(
            earlier.c.scope_id == scope,
            earlier.c.seq < seq,
            earlier.c.status.not_in(sorted(FINISHED)),
        )
        .correlate_except(earlier)
        .exists()
    )


def _claim_statement() -> Any:
    """Start the turn (``p_turn_id``) if it is queued, its merge window (if any) has closed and
    every earlier turn of its scope has finished: one conditional UPDATE returning the row's
    columns (Core, built once; ``p_now`` is the time)."""
    run = _RUN_TABLE
    blocked = _earlier_unfinished(run.c.scope_id, run.c.seq)
    now = bindparam("p_now", type_=run.c.updated_at.type)
    return (
        update(run)
        .where(
            run.c.turn_id == bindparam("p_turn_id"),
            run.c.status == TurnStatus.queued.value,
            or_(run.c.not_before.is_(None), run.c.not_before <= now),
            ~blocked,
        )
        .values(status=TurnStatus.running.value, started_at=now, updated_at=now)
        .returning(*run.c)
    )


def claim_run(engine: Engine, turn_id: str) -> tuple[str, TurnRun]:
    """:func:`claim`, also returning the run as it is after the claim (committed)."""
    with Session(engine, expire_on_commit=False) as s:
        claimed, run = claim_run_in(s, turn_id)
        s.commit()
        return claimed, run


def claim_run_in(session: Bind, turn_id: str) -> tuple[str, TurnRun]:
    """:func:`claim_run` in the caller's transaction: a ``"claimed"`` turn stays locked and
    becomes ``running`` when the caller commits (a rollback undoes the claim).

    The common case — a queued turn that is next in its scope — is one statement; otherwise the
    row is read to say why the turn cannot start.
    """
    s = session
    for _ in range(3):
        now = utcnow()
        row = _CLAIM.first(s, {"p_turn_id": turn_id, "p_now": now})
        if row is not None:
            run = run_from_row(row)
            STAGE_RUN.set(run)
            return "claimed", run
        s.rollback()
        found = _RUN_ROW.first(s, {"p_id": turn_id})
        if found is None:
            raise LookupError(f"turn_id: no turn {turn_id!r}")
        run = run_from_row(found)
        if run.status in FINISHED:
            return "finished", run
        if run.status == TurnStatus.running:
            return "running", run
        if run.not_before is not None and run.not_before > now:
            return "waiting", run  # on_busy = merge: its debounce window is still open
        if blocking_predecessor(s, run) is not None:
            return "blocked", run
        s.rollback()
        # Nothing stood in the way any more (the earlier turn finished just now): try again.
    return "blocked", run


def touch(
    engine: Engine, turn_id: str, stage: str, *, async_commit: bool = False, **fields: Any
) -> None:
    """Record progress: the last stage reached, ``updated_at`` now, and any extra columns.

    ``async_commit``: on PostgreSQL, do not wait for the WAL flush (bookkeeping only).
    """
    with Session(engine) as s:
        if async_commit and engine.dialect.name == "postgresql":
            s.execute(ASYNC_COMMIT)
        s.exec(  # type: ignore[call-overload]
            update(TurnRun)
            .where(TurnRun.turn_id == turn_id)  # type: ignore[arg-type]
            .values(stage=stage, updated_at=utcnow(), **fields)
        )
        s.commit()


def finish(
    engine: Engine,
    turn_id: str,
    status: TurnStatus,
    *,
    reason: str | None = None,
    rendered: list[dict[str, Any]] | None = None,
    close_delivery: str | None = None,
) -> None:
    """Mark a turn finished (done, failed or skipped) in its own transaction.

    ``close_delivery``: the turn has nothing to send — an open delivery is closed ``not_sent``
    with this reason in the same statement (the sweeper never sees it as stalled)."""
    now = utcnow()
    values: dict[str, Any] = {"status": status.value, "updated_at": now, "finished_at": now}
    if reason is not None:
        values["reason"] = reason
    if rendered is not None:
        values["rendered"] = rendered
    if close_delivery is not None:
        from nekoflow.delivery.outbox import closed_delivery

        values.update(closed_delivery(close_delivery))
    stmt = update(TurnRun).where(TurnRun.turn_id == turn_id).values(**values)  # type: ignore[arg-type]
    with Session(engine) as s:
        s.exec(stmt)  # type: ignore[call-overload]
        s.commit()


def claim_next_in(session: Bind, scope_id: str) -> TurnRun | bool | None:
    """In the caller's transaction, after it ended a turn of ``scope_id``: take the scope's
    lock, then claim the first publication of the scope's first unfinished turn if that one is
    queued and unpublished. Returns the claimed turn (the caller publishes it after its commit),
    None when there is none, False when the scope has no lock row (then use
    :func:`nekoflow.turns.publications.next_queued_in_scope` after the commit).

    The lock makes this safe without a read after the commit: an enqueuer inserts under the same
    lock, so its turn is either visible here or, inserted after this commit, sees the scope free
    and publishes itself (:func:`insert_run`).
    """
    if _LOCK_SCOPE.first(session, {"p_scope": scope_id}) is None:
        return False
    row = _CLAIM_NEXT.first(session, {"p_scope": scope_id, "p_now": utcnow()})
    return None if row is None else run_from_row(row)


def lock_scope(session: Bind, scope_id: str) -> bool:
    """Take the scope's lock in the caller's transaction, before anything else it locks: a
    no-op UPDATE of the scope's counter row (a row lock on PostgreSQL, the write lock on SQLite,
    where ``FOR UPDATE`` is not a lock). False when the scope has no counter row yet."""
    return bool(_TOUCH_SCOPE.first(session, {"p_scope": scope_id}))


_TOUCH_SCOPE = FastStatement(
    update(ScopeCounter.__table__)  # type: ignore[attr-defined]
    .where(ScopeCounter.__table__.c.scope_id == bindparam("p_scope"))  # type: ignore[attr-defined]
    .values(last_seq=ScopeCounter.__table__.c.last_seq)  # type: ignore[attr-defined]
    .returning(ScopeCounter.__table__.c.scope_id)  # type: ignore[attr-defined]
)

_LOCK_SCOPE = FastStatement(
    select(ScopeCounter.scope_id)
    .where(ScopeCounter.scope_id == bindparam("p_scope"))
    .with_for_update()
)
"""The scope's lock: its counter row, which every enqueuer of the scope upserts first."""


def _claim_next_statement() -> Any:
    """The first publication of the scope's first unfinished turn, if queued and unpublished:
    one conditional UPDATE returning the row (bind parameters ``p_scope``, ``p_now``)."""
    first = (
        select(_RUN_TABLE.c.turn_id)
        .where(
            _RUN_TABLE.c.scope_id == bindparam("p_scope"),
            _RUN_TABLE.c.status.not_in(list(FINISHED)),
        )
        .order_by(_RUN_TABLE.c.seq)
        .limit(1)
        .scalar_subquery()
    )
    run = _RUN_TABLE
    return (
        update(run)
        .where(
            run.c.turn_id == first,
            run.c.status == TurnStatus.queued.value,
            run.c.publishes == 0,
        )
        .values(publishes=1, updated_at=bindparam("p_now", type_=run.c.updated_at.type))
        .returning(*run.c)
    )


_CLAIM = FastStatement(_claim_statement())
_INSERT_RUN = {claiming: _insert_run(claiming) for claiming in (False, True)}
_CLAIM_NEXT = FastStatement(_claim_next_statement())
