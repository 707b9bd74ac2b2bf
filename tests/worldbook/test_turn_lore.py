"""Lore in real turns (stage functions in process, SQLite and PostgreSQL): a retried before_turn
picks the same probabilistic entries (same turn id → same entries), and sticky entries carry
over committed turns (recorded at apply_deltas, keyed by the turn id)."""

from __future__ import annotations

from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import Session

from nekoflow.storage.turns import TurnStage
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.models import BeforeTurnResult
from nekoflow.turns.runner import run_inline
from nekoflow.turns.stages import STAGE_FUNCS
from nekoflow.worldbook.store import WorldBookStore
from tests.turns.conftest import deps, published, role  # noqa: F401  (fixtures)


def _event(text: str) -> dict:
    return {"session_id": "lore", "message": text, "user_id": "u1", "display_name": "莱姆"}


def _book(engine: Engine, **entries: dict) -> None:
    WorldBookStore(engine).create(
        "lore",
        id="lore",
        entries=[
            {"id": k, "keywords": v.pop("keywords"), "content": f"设定{k}", **v}
            for k, v in entries.items()
        ],
    )


def _injected(turn_deps: TurnDeps, turn_id: str) -> list[str]:
    with Session(turn_deps.engine) as s:
        row = s.get(TurnStage, (turn_id, "before_turn"))
        assert row is not None
        return [e.id for e in BeforeTurnResult.model_validate(row.result).injected]


def test_retried_before_turn_picks_the_same_entries(deps, role) -> None:  # noqa: F811
    _book(
        deps.engine,
        **{f"p{n}": {"keywords": ["猫"], "rules": {"probability": 50}} for n in range(8)},
    )
    # The draw is seeded by the turn id: take the first turn (of its own scope) whose draw
    # kept some entries and dropped others — 1 in 128 ids keeps all or none of the 8.
    for n in range(20):
        event = _event("猫猫在吗") | {"session_id": f"lore-{n}"}
        handle = submit_turn(deps, "web", event)
        STAGE_FUNCS["dispatch"](deps, handle.turn_id)
        STAGE_FUNCS["before_turn"](deps, handle.turn_id)
        first = _injected(deps, handle.turn_id)
        if 0 < len(first) < 8:
            break
    # The worker died before its result was kept: the stage runs again from scratch.
    for _ in range(3):
        with Session(deps.engine) as s:
            s.exec(  # type: ignore[call-overload]
                delete(TurnStage).where(
                    TurnStage.turn_id == handle.turn_id, TurnStage.stage == "before_turn"
                )
            )
            s.commit()
        STAGE_FUNCS["before_turn"](deps, handle.turn_id)
        assert _injected(deps, handle.turn_id) == first
    assert 0 < len(first) < 8  # the draw really happened (8 entries at 50%)


def test_sticky_entry_carries_over_committed_turns(deps, role) -> None:  # noqa: F811
    _book(deps.engine, spark={"keywords": ["火花"], "rules": {"sticky": 2}, "cooldown_turns": 1})
    seen = []
    for text in ("看,火花!", "然后呢", "还有吗", "再说说", "又是火花"):
        handle = submit_turn(deps, "web", _event(text))
        assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
        seen.append(_injected(deps, handle.turn_id))
        # a second delivery of the commit does not count the turn twice
        STAGE_FUNCS["apply_deltas"](deps, handle.turn_id)
    # fired, carried two turns by sticky, then one turn of cooldown, then free to fire again
    assert seen == [["spark"], ["spark"], ["spark"], [], ["spark"]]
