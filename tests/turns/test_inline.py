"""A whole turn through the six stage functions, in process, on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlmodel import Session, select

from nekoflow.llm import LLMClientError, LLMServerError, ScriptedChatModel
from nekoflow.memory.history import load_history
from nekoflow.review import REVIEW_EVENTS
from nekoflow.storage.dialogue import Line
from nekoflow.storage.turns import DeltaLedger, MemoryRecord, Relationship, TurnRun, TurnStage
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline
from nekoflow.turns.stages import STAGE_FUNCS


def web_event(text: str, session: str = "sess1", message_id: str | None = None) -> dict:
    ev = {"session_id": session, "message": text, "user_id": "u1", "display_name": "莱姆"}
    if message_id:
        ev["message_id"] = message_id
    return ev


def test_turn_runs_end_to_end(deps, published, role) -> None:
    handle = submit_turn(deps, "web", web_event("你好呀钦灵,谢谢你一直陪我"))
    assert handle.status() == "queued"
    assert published == [handle.turn_id]
    assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
    assert handle.status() == "done"
    rendered = handle.wait(timeout=1)
    assert rendered and all(m["type"] == "text" for m in rendered)
    assert "【" not in rendered[0]["content"]  # markup is not shown to users
    with Session(deps.engine) as s:
        run = s.get(TurnRun, handle.turn_id)
        assert run.stage == "apply_deltas" and run.llm_model == "scripted"
        assert run.prompt_tokens and run.completion_tokens
        rel = s.get(Relationship, (role.id, run.scope_id))
        assert rel.trust == 51 and rel.familiarity == 31 and rel.turns == 1
        lines = load_history(s, run.save_id)
        assert lines[0].attribute == "user" and lines[0].content.startswith("你好呀钦灵")
        assert all(line.turn_id == handle.turn_id for line in lines)
        assert {st.stage for st in s.exec(select(TurnStage)).all()} == set(STAGE_FUNCS)
    assert deps.events.types == [*REVIEW_EVENTS, "turn.finished"]
    finished = deps.events.events[-1]
    assert finished.payload == {"turn_id": handle.turn_id, "channel": "web", "status": "done"}
    assert finished.conversation_id == "web:conversation:sess1"
    assert finished.character_id == str(role.id)
    assert "你好呀" not in finished.to_json()  # ids and status only, never the text


def test_stages_are_idempotent(deps, role) -> None:
    handle = submit_turn(deps, "web", web_event("我好想你"))
    run_inline(deps, handle.turn_id, sleep=False)
    calls = deps.chat_model.calls
    with Session(deps.engine) as s:
        before_lines = len(s.exec(select(Line)).all())
        before_rel = s.get(Relationship, (role.id, "web:conversation:sess1")).model_dump()
    # every stage delivered again: nothing changes, the model is not asked again
    for stage, func in STAGE_FUNCS.items():
        if stage == "dispatch":
            continue
        try:
            func(deps, handle.turn_id)
        except Exception as exc:  # finished turns stop instead of redoing work
            assert "done" in str(exc)
    assert deps.chat_model.calls == calls
    with Session(deps.engine) as s:
        assert len(s.exec(select(Line)).all()) == before_lines
        assert s.get(Relationship, (role.id, "web:conversation:sess1")).model_dump() == before_rel
        assert len(s.exec(select(DeltaLedger)).all()) == 1


def test_scope_order_and_handoff(deps, published) -> None:
    h1 = submit_turn(deps, "web", web_event("第一句"))
    h2 = submit_turn(deps, "web", web_event("第二句"))
    h3 = submit_turn(deps, "web", web_event("另一个会话", session="other"))
    assert published == [h1.turn_id, h3.turn_id]  # h2 waits behind h1
    assert run_inline(deps, h2.turn_id, sleep=False) == "stop"
    assert h2.status() == "queued"
    run_inline(deps, h1.turn_id, sleep=False)
    assert published == [h1.turn_id, h3.turn_id, h2.turn_id]  # h1's finish started h2
    run_inline(deps, h2.turn_id, sleep=False)
    with Session(deps.engine) as s:
        run = s.get(TurnRun, h2.turn_id)
        contents = [
            line.content for line in load_history(s, run.save_id) if line.attribute == "user"
        ]
    assert contents == ["第一句", "第二句"]


def test_duplicate_platform_message_is_one_turn(deps, published) -> None:
    a = submit_turn(deps, "web", web_event("hi", message_id="m1"))
    b = submit_turn(deps, "web", web_event("hi", message_id="m1"))
    assert a.turn_id == b.turn_id and published == [a.turn_id]


def test_retryable_llm_failures_retry_then_succeed(deps) -> None:
    deps.chat_model = ScriptedChatModel(fail_times=2, failure=LLMServerError)
    handle = submit_turn(deps, "web", web_event("在吗"))
    assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
    run = handle.run()
    assert run.status == "done" and run.llm_attempts == 3


def test_llm_keeps_failing_fails_cleanly(deps, published, role) -> None:
    deps.chat_model = ScriptedChatModel(fail_times=100, failure=LLMServerError)
    handle = submit_turn(deps, "web", web_event("你还在吗"))
    nxt = submit_turn(deps, "web", web_event("下一句"))
    assert run_inline(deps, handle.turn_id, sleep=False) == "failed"
    run = handle.run()
    assert run.status == "failed" and "LLMServerError" in run.reason
    assert run.llm_attempts == deps.settings.llm_max_attempts
    assert handle.wait(timeout=1) == [{"type": "text", "content": deps.settings.failure_reply}]
    with Session(deps.engine) as s:
        lines = s.exec(select(Line).where(Line.turn_id == handle.turn_id)).all()
        assert [line.attribute for line in lines] == ["user"]  # the user line is kept
        assert s.exec(select(DeltaLedger)).all() == []
        assert s.get(Relationship, (role.id, run.scope_id)) is None
        assert s.exec(select(MemoryRecord)).all() == []
    assert published[-1] == nxt.turn_id  # the scope moved on
    [finished] = [e for e in deps.events.events if e.type == "turn.finished"]
    assert finished.payload["status"] == "failed" and "LLMServerError" in finished.payload["reason"]


def test_non_retryable_llm_failure_fails_at_once(deps) -> None:
    deps.chat_model = ScriptedChatModel(fail_times=1, failure=LLMClientError)
    handle = submit_turn(deps, "web", web_event("hello"))
    assert run_inline(deps, handle.turn_id, sleep=False) == "failed"
    assert handle.run().llm_attempts == 1


def test_skipped_messages_make_no_turn(deps, published) -> None:
    from nekoflow.channels import CharacterRuntimeContextDispatcher

    deps.dispatcher = CharacterRuntimeContextDispatcher(
        {"channels": {"web": {"character_runtime": {"enabled": False}}}}
    )
    h = submit_turn(deps, "web", web_event("hi"))
    assert h.status() == "skipped" and h.reason == "disabled" and h.wait() == []
    assert published == []


def test_real_time_gap_uses_platform_message_times(deps, role) -> None:
    from nekoflow.storage.turns import TurnStage

    first = submit_turn(deps, "web", {**web_event("早上好"), "metadata": {"time": 1_700_000_000}})
    run_inline(deps, first.turn_id, sleep=False)
    later = submit_turn(
        deps, "web", {**web_event("我回来了"), "metadata": {"time": 1_700_000_000 + 3 * 86400}}
    )
    run_inline(deps, later.turn_id, sleep=False)
    with Session(deps.engine) as s:
        d1 = s.get(TurnStage, (first.turn_id, "dispatch")).result
        d2 = s.get(TurnStage, (later.turn_id, "dispatch")).result
        review = s.get(TurnStage, (later.turn_id, "review")).result
        prompt = s.get(TurnStage, (later.turn_id, "before_turn")).result["system_prompt"]
        mems = s.exec(select(MemoryRecord)).all()
    assert d1["real_time"]["continuity_level"] == "first_contact"
    assert d2["real_time"] == {
        "continuity_level": "days",
        "elapsed_seconds": 259200.0,
        "elapsed_label": "3天",
    }
    assert review["relationship_delta"]["familiarity"] == 2 and review["should_write_memory"]
    assert "距离上次对话已经过去3天" in prompt
    assert [m.content.splitlines()[0] for m in mems] == ["现实时间间隔:3天"]


def test_only_entries_that_reach_the_prompt_count_as_injected(deps, role) -> None:
    from nekoflow.worldbook import WorldBook, WorldBookEntry, WorldBookRecallConfig
    from nekoflow.worldbook.store import WorldBookStore

    # The matcher's budget counts raw content (60 + 38 <= 100); the injector counts whole
    # sections ("【name】\n" + content), so the second entry does not fit in the prompt.
    book = WorldBook(
        id="b1",
        name="书",
        entries=[
            WorldBookEntry(id="big", name="大", keywords=["猫"], content="甲" * 60, priority=90),
            WorldBookEntry(id="small", name="小", keywords=["猫"], content="乙" * 38, priority=10),
        ],
    )
    WorldBookStore(deps.engine).import_books([book])
    deps.recall_config = WorldBookRecallConfig(max_total_chars=100)
    handle = submit_turn(deps, "web", web_event("我家的猫"))
    assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
    with Session(deps.engine) as s:
        before = s.get(TurnStage, (handle.turn_id, "before_turn")).result
    assert [e["id"] for e in before["injected"]] == ["big"]
    assert "甲" * 60 in before["system_prompt"] and "乙" not in before["system_prompt"]
    assert deps.cooldowns.snapshot("web:conversation:sess1").injections == {"big": 1}


def test_each_turn_sees_the_world_books_as_they_are_when_it_starts(deps, role) -> None:
    """The books' revisions ride in before_turn's character read: a book added, edited,
    disabled or deleted between two turns is what the next turn recalls from."""
    from nekoflow.worldbook import WorldBook, WorldBookEntry
    from nekoflow.worldbook.store import WorldBookStore

    store = WorldBookStore(deps.engine)

    def injected(text: str) -> list[str]:
        handle = submit_turn(deps, "web", web_event(text))
        assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
        with Session(deps.engine) as s:
            before = s.get(TurnStage, (handle.turn_id, "before_turn")).result
        return [e["id"] for e in before["injected"]]

    assert injected("我家的猫") == []  # no book yet: the cache holds no books
    entry = WorldBookEntry(id="cat", name="猫", keywords=["猫"], content="店里有三只猫")
    store.import_books([WorldBook(id="b1", name="书", entries=[entry])])
    assert injected("我家的猫") == ["cat"]
    store.update_entry("b1", "cat", {"keywords": ["狗"]})
    assert injected("我家的猫") == []
    assert injected("我家的狗") == ["cat"]
    assert store.update("b1", enabled=False) is not None
    assert injected("我家的狗") == []
    assert store.update("b1", enabled=True) is not None
    assert injected("我家的狗") == ["cat"]
    assert store.delete("b1")
    assert injected("我家的狗") == []


def test_two_concurrent_memory_builds_of_a_turn_write_its_lines_once(deps, monkeypatch) -> None:
    """Both runs read the turn before either stores: the loser finds the winner's lines under
    the save's lock, conflicts at its stage result and rolls back (or, on SQLite, fails to
    upgrade its snapshot and is retried by the runner): the dialogue holds the turn once."""
    import threading

    from sqlalchemy.exc import OperationalError

    from nekoflow.turns.stages import memory as memory_stage

    handle = submit_turn(deps, "web", web_event("今天的海风好舒服"))
    for stage in ("dispatch", "before_turn", "llm_call"):
        STAGE_FUNCS[stage](deps, handle.turn_id)
    both_read = threading.Barrier(2, timeout=10)
    real = memory_stage.write_turn

    def write_after_both_read(*args, **kwargs):
        both_read.wait()
        return real(*args, **kwargs)

    monkeypatch.setattr(memory_stage, "write_turn", write_after_both_read)
    results, errors = [], []

    def run() -> None:
        try:
            results.append(STAGE_FUNCS["memory_build"](deps, handle.turn_id))
        except OperationalError as exc:  # SQLite: the loser's snapshot is stale; a retry wins
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert results and len(results) + len(errors) == 2
    assert all(r == results[0] for r in results)
    with Session(deps.engine) as s:
        lines = s.exec(select(Line).where(Line.turn_id == handle.turn_id)).all()
        assert sorted(line.id for line in lines) == sorted(results[0].line_ids)
        assert [line.attribute for line in lines].count("user") == 1
    monkeypatch.undo()
    assert STAGE_FUNCS["memory_build"](deps, handle.turn_id) == results[0]  # a retry: stored


def test_a_supersede_landing_while_memory_build_runs_leaves_the_user_line_once(
    deps, monkeypatch
) -> None:
    """``on_busy = interrupt`` keeps a superseded turn's user line (outside any stage result):
    a memory_build that read the turn before the supersede committed must find that line, not
    write it again (on SQLite its stale snapshot fails instead, and the retry sees the turn
    superseded)."""
    import contextlib

    from sqlalchemy.exc import OperationalError

    from nekoflow.turns import flow_store
    from nekoflow.turns.stages import memory as memory_stage

    handle = submit_turn(deps, "web", web_event("等一下,我还没说完"))
    for stage in ("dispatch", "before_turn", "llm_call"):
        STAGE_FUNCS[stage](deps, handle.turn_id)
    real = memory_stage.write_turn

    def supersede_first(*args, **kwargs):
        with Session(deps.engine) as s:
            scope = s.get(TurnRun, handle.turn_id).scope_id
        assert flow_store.supersede_running(deps.engine, scope) == handle.turn_id
        return real(*args, **kwargs)

    monkeypatch.setattr(memory_stage, "write_turn", supersede_first)
    with contextlib.suppress(OperationalError):  # SQLite: the snapshot it read is stale
        STAGE_FUNCS["memory_build"](deps, handle.turn_id)
    with Session(deps.engine) as s:
        users = s.exec(
            select(Line).where(Line.turn_id == handle.turn_id, Line.attribute == "user")
        ).all()
        assert [line.content for line in users] == ["等一下,我还没说完"]


def test_a_call_that_ends_between_the_read_and_the_claim_is_not_made_again(
    deps, monkeypatch
) -> None:
    """Two chains of a turn: the first chain's call ends (answer stored, lease released) after
    the second chain's llm_call read the turn but before it claims the lease. The claim then
    succeeds (attempt 2); the model must not be asked again: the stored answer is used."""
    from nekoflow.turns.llm_lease import claim_llm_call, release_llm_lease
    from nekoflow.turns.models import LLMCallResult
    from nekoflow.turns.stages import llm as llm_stage
    from nekoflow.turns.stages.common import save_result

    handle = submit_turn(deps, "web", web_event("你在吗"))
    for stage in ("dispatch", "before_turn"):
        STAGE_FUNCS[stage](deps, handle.turn_id)
    first = claim_llm_call(deps.engine, handle.turn_id, lease_seconds=60, max_attempts=3)
    assert first.kind == "claimed" and first.attempt == 1
    answer = LLMCallResult(text="【平静】在的。", model="first", attempts=1)
    real_claim = llm_stage.claim_llm_call_in

    def first_chain_ends_then_claim(conn, turn_id, **kwargs):  # type: ignore[no-untyped-def]
        save_result(deps, turn_id, "llm_call", answer, llm_lease_until=None, llm_lease_owner=None)
        release_llm_lease(deps.engine, turn_id, first.owner)
        return real_claim(conn, turn_id, **kwargs)

    monkeypatch.setattr(llm_stage, "claim_llm_call_in", first_chain_ends_then_claim)
    calls = deps.chat_model.calls
    got = STAGE_FUNCS["llm_call"](deps, handle.turn_id)
    assert deps.chat_model.calls == calls  # not asked again
    assert got.text == answer.text and got.model == "first"
    with Session(deps.engine) as s:
        run = s.get(TurnRun, handle.turn_id)
        assert run.llm_attempts == 1 and run.llm_lease_until is None  # the claim was undone
