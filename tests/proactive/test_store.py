"""The schedule store on SQLite and PostgreSQL: planning is idempotent on its key, and sweeps
claiming at once never claim a row twice (a dead sweep's row only after its lease)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine

from nekoflow.proactive import store
from nekoflow.proactive.tables import ProactiveSchedule

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def _row(n: int, due: datetime) -> ProactiveSchedule:
    return ProactiveSchedule(
        key=f"follow_up:t{n}:1",
        kind="follow_up",
        channel="telegram",
        scope_id=f"telegram:private:{n}",
        due_at=due,
        request={"channel": "telegram", "conversation_id": str(n)},
    )


def test_concurrent_claims_take_each_due_row_once(engine: Engine) -> None:
    with engine.begin() as conn:
        for n in range(30):
            assert store.add_schedule(conn, _row(n, T0 - timedelta(minutes=n)))
        assert not store.add_schedule(conn, _row(0, T0))  # planned twice: one row
        store.add_schedule(conn, _row(99, T0 + timedelta(hours=1)))  # not due yet
    claimed: list[list[int]] = []
    start = threading.Barrier(4)

    def sweep() -> None:
        start.wait()
        while batch := store.claim_due(engine, T0, lease_seconds=60, limit=5):
            claimed.append([r.id for r in batch])  # a lost race claims fewer: sweep again

    threads = [threading.Thread(target=sweep) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    ids = [i for batch in claimed for i in batch]
    assert len(ids) == len(set(ids)) == 30  # every due row, none twice
    assert store.claim_due(engine, T0 + timedelta(seconds=30), lease_seconds=60) == []
    # the sweeps died holding them: claimable again once their lease ran out
    again = store.claim_due(engine, T0 + timedelta(seconds=61), lease_seconds=60, limit=100)
    assert sorted(r.id for r in again) == sorted(ids)
    assert store.settle(engine, ids[0], "fired", turn_id="t")
    assert not store.settle(engine, ids[0], "fired", turn_id="u")  # settled once
    assert not store.cancel(engine, ids[0])  # fired: nothing to cancel
    (late,) = store.list_schedules(engine, states=("due",))
    assert store.cancel(engine, late.id) and not store.cancel(engine, late.id)
