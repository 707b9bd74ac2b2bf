"""Publishing turns' chains: who publishes a scope's next turn, and what the sweeper finds to
publish again (turns whose publication was lost, running turns gone quiet).

A turn's first publication is claimed with a conditional UPDATE (``publishes`` 0 → 1), so the
enqueuer and the finisher of the previous turn never both publish it; every later publication
is the sweeper's and is counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import and_, or_, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from nekoflow.storage import read_session
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.turns import FINISHED, TurnRun, TurnStatus
from nekoflow.turns.store import blocking_predecessor


def next_queued_in_scope(engine: Engine, scope_id: str) -> TurnRun | None:
    """The earliest queued turn of a scope whose predecessors have all finished, if any."""
    with read_session(engine) as s:
        first_open = s.exec(
            select(TurnRun)
            .where(
                TurnRun.scope_id == scope_id,
                TurnRun.status.not_in(list(FINISHED)),  # type: ignore[attr-defined]
            )
            .order_by(TurnRun.seq)  # type: ignore[arg-type]
            .limit(1)
        ).first()
        if first_open is None or first_open.status != TurnStatus.queued:
            return None
        return first_open


def mark_published(engine: Engine, turn_ids: Iterable[str]) -> None:
    """Count a (re)publication of each turn's chain and refresh ``updated_at``."""
    ids = list(turn_ids)
    if not ids:
        return
    with Session(engine) as s:
        s.exec(  # type: ignore[call-overload]
            update(TurnRun)
            .where(TurnRun.turn_id.in_(ids))  # type: ignore[attr-defined]
            .values(publishes=TurnRun.publishes + 1, updated_at=utcnow())
        )
        s.commit()


_MAX_BACKOFF = 8
"""A turn re-published again and again waits at most this many leases between two."""


def stuck_turns(
    engine: Engine, *, older_than: timedelta, now: datetime | None = None
) -> list[TurnRun]:
    """Turns that should be moving but have not been touched for ``older_than``.

    Running turns whose worker went quiet (a crashed worker, a lost message), and queued turns
    that are next in their scope but were never started (their publish was lost). A turn the
    sweeper re-published already must stay quiet twice as long for each re-publication (at
    most 8× ``older_than``): one waiting in a backed-up queue is not re-published over and over.
    """
    now = now or utcnow()
    cutoff = now - older_than
    with Session(engine, expire_on_commit=False) as s:
        rows = s.exec(
            select(TurnRun)
            .where(
                TurnRun.updated_at < cutoff,  # type: ignore[arg-type]
                or_(
                    TurnRun.status == TurnStatus.running.value,
                    TurnRun.status == TurnStatus.queued.value,
                ),
            )
            .order_by(TurnRun.created_at)  # type: ignore[arg-type]
        ).all()
        out: list[TurnRun] = []
        for run in rows:
            backoff = min(2 ** max((run.publishes or 1) - 1, 0), _MAX_BACKOFF)
            if run.updated_at >= now - older_than * backoff:
                continue  # re-published not long ago: give that chain its time
            if run.status == TurnStatus.running:
                lease = run.llm_lease_until
                if lease is not None and lease > now:
                    continue  # its LLM call is still running somewhere (the lease is renewed)
                out.append(run)
            elif blocking_predecessor(s, run) is None:
                out.append(run)
        return out


def pending_publishes(
    engine: Engine, *, grace: timedelta = timedelta(seconds=5), limit: int = 500
) -> list[TurnRun]:
    """Queued turns next in their scope whose chain was never handed to the broker (the broker
    was unreachable when they became next), untouched for ``grace`` (an enqueuer may be
    publishing right now): the sweeper publishes them."""
    cutoff = utcnow() - grace
    with Session(engine, expire_on_commit=False) as s:
        rows = s.exec(
            select(TurnRun)
            .where(
                TurnRun.status == TurnStatus.queued.value,
                TurnRun.publishes == 0,
                TurnRun.updated_at < cutoff,  # type: ignore[arg-type]
            )
            .order_by(TurnRun.created_at)  # type: ignore[arg-type]
            .limit(limit)
        ).all()
        return [run for run in rows if blocking_predecessor(s, run) is None]


def publish_failed(engine: Engine, turn_id: str) -> None:
    """Undo a claimed first publication that did not reach the broker: the turn is pending
    again and the sweeper will publish it."""
    with Session(engine) as s:
        s.exec(  # type: ignore[call-overload]
            update(TurnRun)
            .where(
                and_(
                    TurnRun.turn_id == turn_id,
                    TurnRun.status == TurnStatus.queued.value,
                    TurnRun.publishes == 1,
                )
            )
            .values(publishes=0)
        )
        s.commit()


def first_publish(engine: Engine, turn_id: str) -> bool:
    """Claim the right to publish a turn's chain for the first time (exactly one caller wins).

    Both the enqueuer and the finisher of the previous turn may decide a turn is next in its
    scope; the conditional UPDATE makes only one of them publish.
    """
    with Session(engine) as s:
        res = s.exec(  # type: ignore[call-overload]
            update(TurnRun)
            .where(and_(TurnRun.turn_id == turn_id, TurnRun.publishes == 0))
            .values(publishes=1, updated_at=utcnow())
        )
        s.commit()
        return res.rowcount == 1
