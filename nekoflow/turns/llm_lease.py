"""The claim on a turn's LLM call: at most one call in flight per turn, across all chains.

A turn can have two live chains (the sweeper re-published it while a slow call was running, or a
message was redelivered). Before calling the model, a chain takes the turn's LLM lease with one
conditional UPDATE that also counts the attempt; while the call runs a heartbeat renews the lease
(and ``updated_at``, so the sweeper sees the turn moving); afterwards the lease is released. A
crashed worker's lease simply runs out. The attempt counter is the turn's own, so a re-published
chain does not start counting again. The same lease covers an LLM review's call
(:func:`claim_review_call_in`), which counts no attempt.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from types import TracebackType
from typing import Any, Literal

from sqlalchemy import and_, bindparam, or_, select, update
from sqlalchemy.engine import Connection, Engine

from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.fastsql import FastStatement
from nekoflow.storage.turns import TurnRun, TurnStatus
from nekoflow.turns.stage_store import get_stage

_RUN: Any = TurnRun.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class LeaseAttempt:
    """The outcome of trying to claim a turn's LLM call."""

    kind: Literal["claimed", "stored", "busy", "exhausted", "not_running"]
    attempt: int = 0
    owner: str = ""
    wait_seconds: float = 0.0
    #: ``stored``: the result another chain's call stored just before this claim; the caller
    #: rolls its transaction back (the claim is undone) and uses it.
    stored: dict[str, Any] | None = None


def claim_llm_call(
    engine: Engine, turn_id: str, *, lease_seconds: float, max_attempts: int
) -> LeaseAttempt:
    """Claim the LLM call of ``turn_id`` and count the attempt, in one conditional UPDATE.

    ``busy``: another chain's call is in flight (``wait_seconds`` until its lease runs out);
    ``exhausted``: the turn has used all ``max_attempts``; ``not_running``: the turn is not running;
    ``stored``: another chain's answer is stored (nothing is claimed).
    """
    with engine.connect() as conn:
        claim = claim_llm_call_in(
            conn, turn_id, lease_seconds=lease_seconds, max_attempts=max_attempts
        )
        if claim.kind == "stored":
            conn.rollback()
        else:
            conn.commit()
        return claim


def _claim_statement(*, counting: bool) -> Any:
    """Take the lease of a running turn (``p_turn_id``) whose lease is free; ``counting``: also
    count an attempt (only while ``p_max`` are not used up) and record the stage as
    ``llm_call``. Returns the turn's attempt count."""
    at = _RUN.c.updated_at.type
    now = bindparam("p_now", type_=at)
    where = [
        _RUN.c.turn_id == bindparam("p_turn_id"),
        _RUN.c.status == TurnStatus.running.value,
        or_(_RUN.c.llm_lease_until.is_(None), _RUN.c.llm_lease_until < now),
    ]
    values: dict[str, Any] = {
        "llm_lease_until": bindparam("p_until", type_=at),
        "llm_lease_owner": bindparam("p_owner"),
        "updated_at": now,
    }
    if counting:
        where.append(_RUN.c.llm_attempts < bindparam("p_max"))
        values |= {"llm_attempts": _RUN.c.llm_attempts + 1, "stage": "llm_call"}
    return update(_RUN).where(and_(*where)).values(values).returning(_RUN.c.llm_attempts)


_CLAIM = FastStatement(_claim_statement(counting=True))
_CLAIM_UNCOUNTED = FastStatement(_claim_statement(counting=False))
_LEASE_STATE = FastStatement(
    select(_RUN.c.status, _RUN.c.llm_attempts, _RUN.c.llm_lease_until).where(
        _RUN.c.turn_id == bindparam("p_turn_id")
    )
)
"""Built once: a claim runs before every model call."""


def _claim(
    conn: Connection, turn_id: str, stage: str, lease_seconds: float, max_attempts: int | None
) -> LeaseAttempt:
    """Claim the lease for ``stage``'s call (counting the attempt unless ``max_attempts`` is
    None), or say why not — ``stored`` when that stage's result is stored by now."""
    now = utcnow()
    owner = uuid.uuid4().hex
    params = {
        "p_turn_id": turn_id,
        "p_now": now,
        "p_until": now + timedelta(seconds=lease_seconds),
        "p_owner": owner,
    }
    if max_attempts is not None:
        params["p_max"] = max_attempts
    row = (_CLAIM if max_attempts is not None else _CLAIM_UNCOUNTED).first(conn, params)
    if row is not None:
        attempt = int(row[0])
        if max_attempts is None or attempt > 1:
            # Someone held the lease before: their call may have ended after the caller read
            # the turn, storing its result and releasing the lease in one commit. The claim
            # waited for that commit, but a statement keeps the snapshot it started with (READ
            # COMMITTED): look again in a fresh one. (A first counted attempt had no one before.)
            stored = get_stage(conn, turn_id, stage)
            if stored is not None:
                return LeaseAttempt("stored", attempt=attempt, stored=stored)
        return LeaseAttempt("claimed", attempt=attempt, owner=owner)
    cur = _LEASE_STATE.first(conn, {"p_turn_id": turn_id})
    if cur is None or cur[0] != TurnStatus.running.value:
        return LeaseAttempt("not_running")
    attempts, until = int(cur[1]), cur[2]
    if until is not None and until.tzinfo is None:
        until = until.replace(tzinfo=now.tzinfo)
    if until is not None and until >= now:
        return LeaseAttempt("busy", attempt=attempts, wait_seconds=(until - now).total_seconds())
    if max_attempts is None or attempts < max_attempts:
        # The lease was held when the UPDATE ran and released before this read: the other
        # chain's call has just ended (its result may be stored now). Look again shortly —
        # never report attempts as used up that are not.
        return LeaseAttempt("busy", attempt=attempts, wait_seconds=0.2)
    return LeaseAttempt("exhausted", attempt=attempts)


def claim_llm_call_in(
    conn: Connection, turn_id: str, *, lease_seconds: float, max_attempts: int
) -> LeaseAttempt:
    """:func:`claim_llm_call` in the caller's transaction (which must commit before the call:
    the lease only counts once it is visible to the other chains; on ``stored`` it rolls back)."""
    return _claim(conn, turn_id, "llm_call", lease_seconds, max_attempts)


def claim_review_call_in(conn: Connection, turn_id: str, *, lease_seconds: float) -> LeaseAttempt:
    """Take the turn's model-call lease for an LLM review's call, in the caller's transaction
    (commit before calling): the same lease as the reply's call, so at most one model call of a
    turn is in flight across its chains. No attempt is counted (a failed review falls back to
    the rules; it is never retried). ``claimed`` (with ``owner``), ``stored`` (another chain's
    review: roll back and use it), ``busy`` (``wait_seconds``) or ``not_running``."""
    return _claim(conn, turn_id, "review", lease_seconds, None)


def renew_llm_lease(engine: Engine, turn_id: str, owner: str, *, lease_seconds: float) -> bool:
    """Extend ``owner``'s lease (and ``updated_at``); False when the lease is no longer ours."""
    now = utcnow()
    with engine.begin() as conn:
        res = conn.execute(
            update(_RUN)
            .where(and_(_RUN.c.turn_id == turn_id, _RUN.c.llm_lease_owner == owner))
            .values(llm_lease_until=now + timedelta(seconds=lease_seconds), updated_at=now)
        )
        return bool(res.rowcount)


def release_llm_lease(engine: Engine, turn_id: str, owner: str) -> None:
    """Give the lease back after the call (success or failure) so the next attempt may claim."""
    with engine.begin() as conn:
        conn.execute(
            update(_RUN)
            .where(and_(_RUN.c.turn_id == turn_id, _RUN.c.llm_lease_owner == owner))
            .values(llm_lease_until=None, llm_lease_owner=None)
        )


@dataclass
class _Held:
    """A lease in flight, how to renew it (False: no longer ours) and when it is next renewed."""

    renew: Callable[[], bool]
    period: float
    due: float


class _Beats:
    """One daemon thread per process renewing every lease in flight (LLM leases, and the turns'
    own heartbeats of :mod:`nekoflow.turns.heartbeat`), each every ``period`` seconds (a thread
    per call cost ~0.12 ms of CPU per call to start and join, and an ``llm`` worker with 64
    calls in flight ran 64 of them)."""

    def __init__(self) -> None:
        self._wake = threading.Condition()
        self._held: dict[int, _Held] = {}
        self._next_key = 0
        self._pid: int | None = None
        #: When the thread wakes next by itself (None: it waits to be woken). A new beat due
        #: no earlier needs no wake-up: every stage adds one, and waking the thread for each
        #: cost a context switch per stage.
        self._until: float | None = None

    def add(self, renew: Callable[[], bool], period: float) -> int:
        """Start calling ``renew`` every ``period`` seconds; returns the key that stops it."""
        with self._wake:
            if self._pid != os.getpid():  # first use, or a forked child: the thread is not here
                self._held.clear()
                self._pid = os.getpid()
                self._until = None
                threading.Thread(target=self._run, name="llm-lease-heartbeat", daemon=True).start()
            self._next_key += 1
            due = time.monotonic() + period
            self._held[self._next_key] = _Held(renew, period, due)
            if self._until is None or due < self._until:
                self._wake.notify()
            return self._next_key

    def remove(self, key: int) -> None:
        """Stop renewing the lease ``key`` (its call has ended)."""
        with self._wake:
            self._held.pop(key, None)

    def _run(self) -> None:
        pid = os.getpid()
        while True:
            with self._wake:
                if self._pid != pid:
                    return  # pragma: no cover - a thread carried over by fork never runs
                now = time.monotonic()
                due = [(k, h) for k, h in self._held.items() if h.due <= now]
                if not due:
                    self._until = min((h.due for h in self._held.values()), default=None)
                    self._wake.wait(None if self._until is None else self._until - now)
                    self._until = None  # awake: a beat added now is seen before the next wait
                    continue
                for _, h in due:
                    h.due = now + h.period
            for key, h in due:  # outside the lock: a slow database delays no call
                try:
                    if not h.renew():
                        self.remove(key)  # no longer ours: stop renewing it
                except Exception:  # a database hiccup: try again at the next beat
                    continue


_BEATS = _Beats()


def start_beat(renew: Callable[[], bool], period: float) -> int:
    """Have the process's heartbeat thread call ``renew`` every ``period`` seconds until it
    returns False or :func:`stop_beat`; returns the key that stops it."""
    return _BEATS.add(renew, period)


def stop_beat(key: int) -> None:
    """Stop the beat ``key`` (its work has ended)."""
    _BEATS.remove(key)


class LeaseHeartbeat:
    """Renews a held LLM lease every third of its length while the call runs (by the process's
    one heartbeat thread)."""

    def __init__(self, engine: Engine, turn_id: str, owner: str, *, lease_seconds: float) -> None:
        self._engine, self._turn_id, self._owner = engine, turn_id, owner
        self._lease = lease_seconds
        self._key: int | None = None

    def __enter__(self) -> LeaseHeartbeat:
        self._key = _BEATS.add(self._renew, self._lease / 3)
        return self

    def _renew(self) -> bool:
        """One beat: extend the lease (False once it is no longer ours)."""
        return renew_llm_lease(self._engine, self._turn_id, self._owner, lease_seconds=self._lease)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._key is not None:
            _BEATS.remove(self._key)
