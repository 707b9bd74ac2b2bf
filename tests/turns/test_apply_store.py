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
from nekoflow.turns.apply_store import bump_relationship, lock_with_ledger


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
