"""Long-term memory inside a turn (SQLite and PostgreSQL): before_turn retrieves and records
what it used, apply_deltas consolidates exactly once, and retries change nothing."""

from __future__ import annotations

from sqlmodel import Session, col, select

from nekoflow.storage.turns import MemoryRecord, TurnStage
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.models import ApplyResult, BeforeTurnResult
from nekoflow.turns.runner import run_inline
from nekoflow.turns.stages import STAGE_FUNCS


def web_event(text: str, session: str = "sess1") -> dict:
    """A Web message with an important plot choice, so the rule review writes a memory."""
    return {
        "session_id": session,
        "message": text,
        "user_id": "u1",
        "display_name": "莱姆",
        "metadata": {"choice": {"level": "important", "text": text[:12]}},
    }


def _turn(deps, text: str) -> str:
    handle = submit_turn(deps, "web", web_event(text))
    assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
    return handle.turn_id


def _stage(deps, turn_id: str, stage: str) -> dict:
    with Session(deps.engine) as s:
        row = s.get(TurnStage, (turn_id, stage))
        assert row is not None
        return dict(row.result)


def _memories(deps) -> list[MemoryRecord]:
    with Session(deps.engine) as s:
        return list(s.exec(select(MemoryRecord).order_by(col(MemoryRecord.id))).all())


def test_retrieval_is_recorded_and_marks_use_once(deps, role) -> None:
    first = _turn(deps, "谢谢你一直陪着我,我最喜欢草莓蛋糕了")
    planted = _memories(deps)
    assert planted and planted[0].terms and planted[0].fact_key
    second = _turn(deps, "你还记得我最喜欢什么蛋糕吗?谢谢你")
    b = BeforeTurnResult.model_validate(_stage(deps, second, "before_turn"))
    ids = [r["id"] for r in b.memory_refs]
    assert planted[0].id in ids and b.memories == len(b.memory_refs)
    ref = b.memory_refs[ids.index(planted[0].id)]
    assert ref["kind"] == "fact" and set(ref) >= {"score", "relevance", "importance", "recency"}
    assert "草莓" not in str(b.memory_refs)  # ids and scores, never text
    assert "草莓蛋糕" in b.system_prompt
    assert b.history_lines is not None and b.history_lines >= 2  # all of the first turn
    assert b.history_beyond is False
    used = next(m for m in _memories(deps) if m.id == planted[0].id)
    assert used.access_count == 1 and used.last_accessed_at is not None
    assert first != second


def test_a_redelivered_before_turn_marks_use_once(deps, role) -> None:
    _turn(deps, "谢谢你一直陪着我,我最喜欢草莓蛋糕了")
    handle = submit_turn(deps, "web", web_event("你还记得我最喜欢什么蛋糕吗?谢谢你"))
    STAGE_FUNCS["dispatch"](deps, handle.turn_id)
    one = STAGE_FUNCS["before_turn"](deps, handle.turn_id)
    two = STAGE_FUNCS["before_turn"](deps, handle.turn_id)  # redelivered: the stored result
    assert one.memory_refs == two.memory_refs and one.memory_refs
    counts = {m.id: m.access_count for m in _memories(deps)}
    assert counts[one.memory_refs[0]["id"]] == 1


def test_apply_consolidates_once_under_retry(deps, role) -> None:
    turn = _turn(deps, "谢谢你一直陪着我,我叫小明")
    before = [(m.id, m.content, m.mentions) for m in _memories(deps)]
    result = ApplyResult.model_validate(_stage(deps, turn, "apply_deltas"))
    assert result.memory_ops["added"] == len(before) >= 1
    retried = STAGE_FUNCS["apply_deltas"](deps, turn)  # a redelivered apply
    assert retried.memory_ops == result.memory_ops
    assert [(m.id, m.content, m.mentions) for m in _memories(deps)] == before
    # the same words in a later turn restate the memory instead of adding one
    _turn(deps, "谢谢你一直陪着我,我叫小明")
    after = _memories(deps)
    assert len(after) == len(before)
    assert after[0].mentions == 2
