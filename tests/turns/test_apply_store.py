"""apply_deltas' statements: the running turn locked with its ledger row, the relationship
moved by an upsert (clamped 0–100, first turn from the prompt's values), on both databases."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from nekoflow.review.models import RelationshipDelta
from nekoflow.storage.dialogue import Role, utcnow
from nekoflow.storage.turns import DeltaLedger, Relationship, TurnRun, TurnStatus
from nekoflow.turns.apply_store import bump_relationship, lock_and_bump, lock_with_ledger


def _role(engine: Engine) -> int:
    with Session(engine) as s:
        role = Role.new("钦灵")
        s.add(role)
        s.commit()
        assert role.id is not None
        return role.id


def _turn(engine: Engine, turn_id: str, status: TurnStatus) -> None:
    with Session(engine) as s:
        s.add(TurnRun(turn_id=turn_id, channel="web", scope_id=turn_id, seq=1, status=status))
        s.commit()


def test_a_first_turn_starts_from_the_prompt_values_then_moves_and_clamps(engine: Engine) -> None:
    role_id = _role(engine)
    start = {"affection": 98, "trust": 3, "familiarity": 30}
    delta = RelationshipDelta(affection=5, trust=-5, familiarity=2)
    with Session(engine) as s:
        dims, turns = bump_relationship(
            s, role_id=role_id, scope_id="s", start=start, delta=delta, now=utcnow()
        )
        s.commit()
    assert (dims["affection"], dims["trust"], dims["familiarity"], turns) == (100, 0, 32, 1)
    assert dims["security"] == 50 and dims["jealousy"] == 0  # defaults for what start lacks
    big = RelationshipDelta(affection=-250, jealousy=400)
    with Session(engine) as s:  # an existing row moves from its stored values, not from start
        dims, turns = bump_relationship(
            s, role_id=role_id, scope_id="s", start={"affection": 10}, delta=big, now=utcnow()
        )
        s.commit()
    assert (dims["affection"], dims["jealousy"], dims["familiarity"], turns) == (0, 100, 32, 2)
    with Session(engine) as s:
        row = s.get(Relationship, (role_id, "s"))
        assert row is not None and (row.affection, row.jealousy, row.turns) == (0, 100, 2)


def test_no_delta_counts_the_turn_only(engine: Engine) -> None:
    role_id = _role(engine)
    for expected in (1, 2):
        with Session(engine) as s:
            dims, turns = bump_relationship(
                s, role_id=role_id, scope_id="s", start={}, delta=None, now=utcnow()
            )
            s.commit()
        assert turns == expected and dims["affection"] == 50


def test_the_ledger_is_written_only_for_a_running_turn_and_only_once(engine: Engine) -> None:
    _turn(engine, "run", TurnStatus.running)
    _turn(engine, "gone", TurnStatus.superseded)
    with Session(engine) as s:
        assert lock_with_ledger(s, "gone", utcnow()) is False
        assert lock_with_ledger(s, "run", utcnow()) is True
        s.commit()
    with Session(engine) as s:
        assert s.get(DeltaLedger, "gone") is None and s.get(DeltaLedger, "run") is not None
    with Session(engine) as s, pytest.raises(IntegrityError):  # applied before: exactly once
        lock_with_ledger(s, "run", utcnow())


def test_lock_and_bump_moves_the_relationship_only_for_a_running_turn_applied_once(
    engine: Engine,
) -> None:
    """One statement on PostgreSQL (two on SQLite): ledger row and relationship together,
    neither for a turn that is not running, and a second apply of a turn moves nothing."""
    role_id = _role(engine)
    _turn(engine, "run", TurnStatus.running)
    _turn(engine, "gone", TurnStatus.superseded)
    delta = RelationshipDelta(affection=3, trust=-2)

    def bump(s: Session, turn_id: str) -> tuple[dict[str, int], int] | None:
        return lock_and_bump(
            s, turn_id, role_id=role_id, scope_id="s", start={}, delta=delta, now=utcnow()
        )

    with Session(engine) as s:
        assert bump(s, "gone") is None
        s.commit()
    with Session(engine) as s:
        assert s.get(Relationship, (role_id, "s")) is None  # nothing moved for it
        assert s.get(DeltaLedger, "gone") is None
    with Session(engine) as s:
        moved = bump(s, "run")
        s.commit()
    assert moved is not None
    dims, turns = moved
    assert (dims["affection"], dims["trust"], dims["familiarity"], turns) == (53, 48, 30, 1)
    with Session(engine) as s:
        with pytest.raises(IntegrityError):  # applied before: exactly once
            bump(s, "run")
        s.rollback()
    with Session(engine) as s:
        row = s.get(Relationship, (role_id, "s"))
        assert row is not None and (row.affection, row.trust, row.turns) == (53, 48, 1)
        assert s.get(DeltaLedger, "run") is not None
