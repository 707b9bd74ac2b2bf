"""A proactive turn through the real stage functions (inline, SQLite and PostgreSQL): the model
gets an instruction instead of a user's message, the dialogue keeps only the character's
lines, and a proactive turn superseded by the user's message leaves no reply in the history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlmodel import Session

from nekoflow.memory.history import load_history
from nekoflow.proactive import store
from nekoflow.proactive.config import ProactiveConfig
from nekoflow.proactive.tables import ProactiveSchedule
from nekoflow.turns import store as turn_store
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.flow_store import supersede_running
from nekoflow.turns.proactive_sweep import sweep_due
from nekoflow.turns.runner import execute_stage, run_inline
from nekoflow.turns.stages.prompt import llm_messages

EVENT = {"session_id": "p1", "message": "我先去写作业了", "user_id": "u1", "display_name": "莱姆"}


def _proactive_turn(deps, published) -> tuple[str, str]:
    deps.proactive = ProactiveConfig.model_validate(
        {"channels": {"web": {"follow_up_after": 7200}}}
    )
    handle = submit_turn(deps, "web", EVENT)
    assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
    (row,) = store.list_schedules(deps.engine)
    fired = sweep_due(deps, row.due_at + timedelta(seconds=1)).fired
    assert len(fired) == 1 and published[-1] == fired[0]
    return handle.turn_id, fired[0]


def test_a_proactive_turn_reaches_out(deps, published) -> None:
    user_turn, turn_id = _proactive_turn(deps, published)
    run = turn_store.get_run(deps.engine, turn_id)
    assert run is not None and run.scope_id is not None
    with deps.engine.begin() as conn:  # a promise still open: the follow-up knows of it
        store.add_schedule(
            conn,
            ProactiveSchedule(
                key="reminder:x",
                kind="reminder",
                channel="web",
                scope_id=run.scope_id,
                due_at=datetime.now(UTC) + timedelta(days=1),
                note="交报告",
            ),
        )
    assert run_inline(deps, turn_id, sleep=False) == "ok"
    messages = llm_messages(deps, turn_id)
    assert messages[-1]["role"] == "system" and "主动" in messages[-1]["content"]
    assert "交报告" in messages[-1]["content"]
    assert [m["content"] for m in messages if m["role"] == "user"] == ["我先去写作业了"]
    run = turn_store.get_run(deps.engine, turn_id)
    assert run is not None and run.status == "done" and run.rendered
    with Session(deps.engine) as s:
        lines = load_history(s, run.save_id)
    mine = [ln for ln in lines if ln.turn_id == turn_id]
    assert mine and all(ln.attribute == "assistant" for ln in mine)  # no "…" user line
    assert lines[0].turn_id == user_turn


def test_a_superseded_proactive_turn_leaves_no_reply(deps, published) -> None:
    _, turn_id = _proactive_turn(deps, published)
    for stage in ("dispatch", "before_turn", "llm_call", "memory_build"):
        assert execute_stage(deps, stage, turn_id).kind == "ok"
    run = turn_store.get_run(deps.engine, turn_id)
    assert run is not None and run.scope_id is not None
    with Session(deps.engine) as s:
        assert any(ln.turn_id == turn_id for ln in load_history(s, run.save_id))
    assert supersede_running(deps.engine, run.scope_id) == turn_id  # the user wrote
    with Session(deps.engine) as s:
        lines = load_history(s, run.save_id)
    assert lines and all(ln.turn_id != turn_id for ln in lines)
    assert [ln.attribute for ln in lines] == ["user", *["assistant"] * (len(lines) - 1)]
