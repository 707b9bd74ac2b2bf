"""Turn extraction from the dialogue tree: user runs, multi-line replies, the active path only,
gaps from line timestamps, plot choices from TurnRun metadata — the live turn's ReviewInput."""

from __future__ import annotations

from datetime import timedelta

from sqlmodel import Session

from nekoflow.memory.history import load_history_rows
from nekoflow.rereview import RunInfo, extract_turns, review_input
from nekoflow.rereview.store import load_runs
from nekoflow.review.models import ReviewInput
from nekoflow.turns.characters import DEFAULT_RELATIONSHIP
from tests.rereview.conftest import T0, Convo, add_role, add_turn_run


def _extract(engine, c: Convo):
    with Session(engine) as s:
        path = load_history_rows(s, c.save_id)
        runs = load_runs(s, [ln.turn_id for ln in path if ln.turn_id])
    return extract_turns(c.save_id, c.role_id, c.scope_id, path), runs


def test_extraction_follows_the_active_path(engine, role_id) -> None:
    other = add_role(engine, "旁白")
    c = Convo(engine, role_id, "qq:group:9:user:1")
    c.line("assistant", "欢迎回来")  # a greeting before any user line: not a turn
    u1 = c.line("user", "你好", after=timedelta(minutes=1), turn_id="t-1")
    c.line("assistant", "喵", action="摇尾巴", turn_id="t-1")
    c.line("assistant", "今天想做什么?", turn_id="t-1")
    dead_parent = c.last
    # a user run of two lines, a narrator line, then the character's reply
    u2 = c.line("user", "我想", after=timedelta(hours=2))
    c.line("user", "谢谢你")
    c.line("system", "(窗外下起了雨)", role_id=None)
    c.line("assistant", "旁白", role_id=other)  # another character speaks: context
    c.line("assistant", "不客气")
    # an unanswered user line (failed turn), then a turn three days later
    c.line("user", "在吗", after=timedelta(minutes=3))
    c.line("system", "系统提示", role_id=None)
    u4 = c.line("user", "我回来了", after=timedelta(days=3), turn_id="t-4")
    c.line("assistant", "好想你")
    # a regenerated branch under turn 1's reply that is not active
    c.line("user", "分支", parent=dead_parent, activate=False)
    c.line("assistant", "分支回复", parent=c.ids[-1], activate=False)
    add_turn_run(engine, "t-1", c.scope_id, choice={"level": "important", "text": "接受邀请"})
    add_turn_run(engine, "t-4", c.scope_id, choice={"level": "bogus"}, channel="qq")

    ext, runs = _extract(engine, c)
    turns = ext.turns
    assert [t.line_id for t in turns] == [u1, u2, u4]
    assert ext.unanswered == 1
    assert [t.seq for t in turns] == [0, 1, 2]
    assert turns[0].user_message == "你好"
    assert turns[0].assistant_message == "喵(摇尾巴)今天想做什么?"
    assert turns[1].user_message == "我想\n谢谢你"
    assert turns[1].assistant_message == "不客气"
    assert turns[0].key == f"{c.save_id}:{u1}"
    # gaps: from the line before the turn's first user line
    assert turns[0].previous_at == T0 + timedelta(seconds=5)
    assert turns[2].previous_at == turns[2].sent_at - timedelta(days=3)

    rel = {"affection": 50, "trust": 50}
    first = review_input(turns[0], rel, runs.get("t-1"))
    assert first.selected_choice == {"level": "important", "text": "接受邀请"}
    assert first.real_time_context["continuity_level"] == "continuous"
    assert first.turn_context == {"turn_id": "t-1", "channel": "web"}
    assert first.user_id == "u1"
    second = review_input(turns[1], rel, None)
    assert second.real_time_context["continuity_level"] == "short_gap"
    assert second.real_time_context["elapsed_label"] == "2小时"
    assert second.turn_context == {"turn_id": None, "channel": "qq"}  # from the scope id
    last = review_input(turns[2], rel, runs.get("t-4"))
    assert last.selected_choice is None  # an invalid recorded choice is dropped, as live
    assert last.real_time_context["continuity_level"] == "days"


def test_review_input_matches_the_live_shape(engine, role_id) -> None:
    c = Convo(engine, role_id, "web:user:u1")
    c.turn("我相信你", "嗯嗯", turn_id="t-9")
    add_turn_run(engine, "t-9", c.scope_id, choice={"level": "turning_point", "text": "留下"})
    ext, runs = _extract(engine, c)
    rel = dict(DEFAULT_RELATIONSHIP)
    got = review_input(ext.turns[0], rel, runs["t-9"])
    # the fields nekoflow.turns.stages.review_input fills, with the same values
    expected = ReviewInput(
        conversation_id="web:user:u1",
        character_id=str(role_id),
        user_id="u1",
        group_id=None,
        user_message="我相信你",
        assistant_message="嗯嗯",
        selected_choice={"level": "turning_point", "text": "留下"},
        relationship_state=rel,
        real_time_context={
            "continuity_level": "first_contact",
            "elapsed_seconds": None,
            "elapsed_label": "初次记录",
        },
        turn_context={"turn_id": "t-9", "channel": "web"},
    )
    assert got == expected


def test_cycle_and_empty_save_are_safe(engine, role_id) -> None:
    c = Convo(engine, role_id, "web:user:empty")
    ext, _ = _extract(engine, c)
    assert ext.turns == [] and ext.unanswered == 0
    assert extract_turns(1, 1, "s", []).turns == []
    assert review_input  # imported from the package surface
    assert RunInfo().choice is None
