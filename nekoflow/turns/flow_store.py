"""SQL side of conversation flow: merging a message into its scope's queued turn, busy checks.

The merge and the turn's claim (``nekoflow.turns.store.claim_run``) are both conditional
UPDATEs of the turn row while it is ``queued``, so they serialise on that row (a row lock on
PostgreSQL, the write lock on SQLite): a message is merged into a turn before the turn starts
or not at all — then it becomes a turn of its own. Nothing is lost or answered twice.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

from sqlalchemy import and_, bindparam, func, or_, update
from sqlalchemy import literal as sa_literal
from sqlalchemy import select as sa_select
from sqlalchemy import true as sa_true
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from nekoflow.delivery.outbox import closed_delivery
from nekoflow.flow.policy import FlowPolicy
from nekoflow.storage import read_session
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.fastsql import Bind, FastStatement
from nekoflow.storage.turns import FINISHED, TurnMessage, TurnRun, TurnStatus

_RUN: Any = TurnRun.__table__  # type: ignore[attr-defined]
_MSG: Any = TurnMessage.__table__  # type: ignore[attr-defined]


def _known_turn(key: Any) -> Any:
    """The turn a platform message belongs to — its own or the one it was merged into — as a
    scalar select of the dedupe ``key`` (a value or a bind parameter; NULL for a new message)."""
    own = sa_select(_RUN.c.turn_id).where(_RUN.c.dedupe_key == key).scalar_subquery()
    merged = sa_select(_MSG.c.turn_id).where(_MSG.c.dedupe_key == key).scalar_subquery()
    return func.coalesce(own, merged)


_KNOWN = sa_select(_known_turn(bindparam("key")))
"""Built once (statement construction costs more than running it): see merged_turn_for."""


def _probe() -> Any:
    """In one statement: is the message (``key``) known, and the newest queued turn of the
    ``scope`` (its id and creation time), if any."""
    queued = (
        sa_select(_RUN.c.turn_id, _RUN.c.created_at)
        .where(
            _RUN.c.scope_id == bindparam("scope"),
            _RUN.c.status == TurnStatus.queued.value,
            # a proactive turn (the character writes first) never takes a user's message in
            or_(_RUN.c.dedupe_key.is_(None), ~_RUN.c.dedupe_key.startswith("proactive:")),
        )
        .order_by(_RUN.c.seq.desc())
        .limit(1)
        .subquery()
    )
    return sa_select(
        _known_turn(bindparam("key")).label("known"), queued.c.turn_id, queued.c.created_at
    ).select_from(sa_select(sa_literal(1).label("one")).subquery().outerjoin(queued, sa_true()))


_PROBE = _probe()


def merged_turn_for(engine: Engine, dedupe_key: str | None) -> str | None:
    """The turn a platform message already belongs to — its own turn or the one it was merged
    into — when the platform redelivers it; None for a new message (one Core statement)."""
    if not dedupe_key:
        return None
    with engine.connect() as conn:
        return conn.execute(_KNOWN, {"key": dedupe_key}).scalar()


class Written(NamedTuple):
    """What :func:`create_or_merge` did with a message."""

    #: ``new`` (``row`` inserted), ``merged`` (joined the queued ``turn_id``), ``known`` (the
    #: platform redelivered it: ``turn_id`` is the turn it already belongs to) or ``busy``
    #: (``reject``: the scope has an unfinished turn; nothing written).
    outcome: Literal["new", "merged", "known", "busy"]
    row: TurnRun | None = None
    turn_id: str | None = None


_BUSY = sa_select(
    sa_select(_RUN.c.turn_id)
    .where(_RUN.c.scope_id == bindparam("scope"), _RUN.c.status.not_in(sorted(FINISHED)))
    .exists()
)
"""Has the scope (``scope``) a queued or running turn (built once)."""


def create_or_merge(
    engine: Engine,
    run: TurnRun,
    policy: FlowPolicy,
    *,
    claim_publish: bool = False,
    reject_busy: bool = False,
) -> Written:
    """In one transaction holding the scope's counter lock: for ``merge``/``interrupt``, merge
    the message into the scope's queued turn, or else insert ``run`` as a new turn; with
    ``reject_busy`` (``on_busy = reject``), insert ``run`` only when the scope has no queued or
    running turn.

    The lock serialises every creator of the scope's turns, so concurrent first messages of a
    burst are one turn (merge) or one admitted message (reject): the busy check and the merge
    target are read after the lock is taken, never before. A redelivered message comes back as
    ``known``. ``claim_publish``: a new turn that is next in its scope gets its first
    publication claimed in the same transaction (``publishes == 1``: the caller publishes it).
    """
    from nekoflow.turns.store import insert_run, next_seq

    assert run.scope_id is not None
    with Session(engine, expire_on_commit=False) as s:
        seq = next_seq(s, run.scope_id)  # the scope's lock until this transaction ends
        params = {"key": run.dedupe_key, "scope": run.scope_id}
        seen, target_id, created_at = s.execute(_PROBE, params).one()
        if seen is not None:
            s.rollback()
            return Written("known", turn_id=seen)
        if reject_busy:
            if s.execute(_BUSY, params).scalar():
                s.rollback()
                return Written("busy")
            target_id = None
        if target_id is not None:
            now = utcnow()
            first = created_at.replace(tzinfo=created_at.tzinfo or UTC)
            until = policy.debounce_until(first.timestamp(), now.timestamp())
            not_before = datetime.fromtimestamp(until, UTC) if policy.debounce_seconds else None
            # Waits for a claim of the same row in progress (its row lock; SQLite's write lock
            # was taken by the counter): a turn that started meanwhile is not joined.
            res = s.execute(
                update(_RUN)
                .where(_RUN.c.turn_id == target_id, _RUN.c.status == TurnStatus.queued.value)
                .values(not_before=not_before, updated_at=now)
            )
            if res.rowcount == 1:  # type: ignore[attr-defined]
                s.add(
                    TurnMessage(turn_id=target_id, dedupe_key=run.dedupe_key, request=run.request)
                )
                try:
                    s.commit()
                    return Written("merged", turn_id=target_id)
                except IntegrityError:  # the same platform message, merged concurrently
                    s.rollback()
                    return Written("known", turn_id=merged_turn_for(engine, run.dedupe_key))
        try:
            row = insert_run(s, run, seq, claim_publish=claim_publish)
            s.commit()
        except IntegrityError:  # the same platform message, enqueued concurrently: theirs
            s.rollback()
            return Written("known", turn_id=merged_turn_for(engine, run.dedupe_key))
        return Written("new", row=row, turn_id=row.turn_id)


_MERGED = FastStatement(
    select(TurnMessage.request, TurnMessage.created_at)
    .where(TurnMessage.turn_id == bindparam("p_turn_id"))
    .order_by(col(TurnMessage.id))
)
"""The messages merged into a turn, in arrival order (built once)."""


def merged_requests(
    engine: Engine, turn_id: str, session: Bind | None = None
) -> list[tuple[dict[str, Any], datetime]]:
    """The requests merged into ``turn_id`` and when each arrived, in arrival order (read in
    ``session``'s transaction when given)."""
    params = {"p_turn_id": turn_id}
    if session is not None:
        rows = _MERGED.rows(session, params)
    else:
        with read_session(engine) as s:
            rows = _MERGED.rows(s, params)
    return [(dict(r), at) for r, at in rows]


def supersede_running(
    engine: Engine, scope_id: str, *, before_seq: int | None = None
) -> str | None:
    """``on_busy = interrupt``: end the scope's running turn (one that arrived before
    ``before_seq``, when given) as ``superseded`` unless its deltas are applied; returns its id
    (None when there is nothing to supersede).

    In one transaction: the status flips only while the turn is still ``running`` (the same row
    ``apply_deltas`` re-checks under its lock, so a turn past apply is never undone), its user
    line(s) are kept in the dialogue tree, a reply it already wrote is left on an inactive
    branch (the active leaf goes back to its last user line), and its delivery is closed
    (``not_sent``, reason ``superseded``). The turn's chain stops at its next stage; nothing is
    applied or sent. A turn is claimed and dispatched in one transaction, so a running turn
    always has its dispatch result; ``apply_deltas`` checks for a newer turn itself under the
    scope's lock (:func:`newer_turn_exists`), so a message that was written before the turn
    applied supersedes it even when this call comes too late.
    """
    with Session(engine) as s:
        query = select(TurnRun).where(
            TurnRun.scope_id == scope_id, TurnRun.status == TurnStatus.running.value
        )
        if before_seq is not None:
            query = query.where(col(TurnRun.seq) < before_seq)
        run = s.exec(query.order_by(col(TurnRun.seq)).limit(1)).first()
        if run is None:
            return None
        return _supersede(s, run)


def supersede_turn(engine: Engine, turn_id: str) -> str | None:
    """End the running turn ``turn_id`` as ``superseded`` (as :func:`supersede_running`)."""
    with Session(engine) as s:
        run = s.get(TurnRun, turn_id)
        if run is None or run.status != TurnStatus.running:
            return None
        return _supersede(s, run)


_NEWER = sa_select(
    sa_select(_RUN.c.turn_id)
    .where(
        _RUN.c.scope_id == bindparam("scope"),
        _RUN.c.seq > bindparam("seq"),
        _RUN.c.status.not_in(sorted(FINISHED)),
    )
    .exists()
)


def newer_turn_exists(session: Bind, scope_id: str, seq: int | None) -> bool:
    """In the caller's transaction (which holds the scope's lock): has a message arrived after
    the turn ``seq`` of ``scope_id`` — a later queued or running turn of the scope?"""
    if seq is None:
        return False
    return bool(session.execute(_NEWER, {"scope": scope_id, "seq": seq}).scalar())


def _supersede(s: Session, run: TurnRun) -> str | None:
    """Supersede ``run`` (read in ``s``) and commit; its id, or None when it is past apply."""
    from nekoflow.memory.turn_lines import lock_save, saved_turn_lines, set_active_leaf, write_turn
    from nekoflow.storage.turns import DeltaLedger, TurnStage
    from nekoflow.turns.models import DispatchResult

    stored = s.get(TurnStage, (run.turn_id, "dispatch"))
    if stored is None:
        return None
    d = DispatchResult.model_validate(stored.result)
    # Lock order as memory_build has it — the save, then the turn row — so the two never
    # deadlock (memory_build writes the lines under the save lock, then its stage result).
    lock_save(s, d.save_id)
    applied = select(DeltaLedger.turn_id).where(DeltaLedger.turn_id == run.turn_id).exists()
    now = utcnow()
    res = s.exec(  # type: ignore[call-overload]
        update(TurnRun)
        .where(
            and_(
                TurnRun.turn_id == run.turn_id,
                TurnRun.status == TurnStatus.running.value,
                ~applied,
            )
        )
        .values(
            status=TurnStatus.superseded.value,
            reason="superseded",
            rendered=[],
            finished_at=now,
            updated_at=now,
            **closed_delivery("superseded"),
        )
        .execution_options(synchronize_session=False)
    )
    if res.rowcount != 1:
        s.rollback()
        return None
    from nekoflow.proactive.turns import proactive_of
    from nekoflow.turns.lines import request_of, user_lines

    if proactive_of(run.request.get("metadata")) is not None:
        # the character's own turn: no user's message to keep, and a reply it wrote (never
        # sent) leaves the active path
        written = saved_turn_lines(s, d.save_id, run.turn_id)
        if written and written[0].parent_line_id is not None:
            set_active_leaf(s, d.save_id, written[0].parent_line_id)
        s.commit()
        return run.turn_id
    lines = write_turn(
        s,
        save_id=d.save_id,
        turn_id=run.turn_id,
        user_lines=user_lines(request_of(run), d),
        reply_segments=[],
        role_id=d.role_id,
        display_name=d.role_name,
        now=d.sent_at,
    )
    users = [ln for ln in lines if ln.attribute == "user" and ln.id is not None]
    written = saved_turn_lines(s, d.save_id, run.turn_id)
    if users and any(ln.attribute == "assistant" for ln in written):
        set_active_leaf(s, d.save_id, users[-1].id)  # type: ignore[arg-type]
    s.commit()
    return run.turn_id
