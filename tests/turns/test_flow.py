"""Conversation flow with the real turn pipeline: merge, reject, stale and rate limits.

Inline tests run the stages in this process on SQLite and PostgreSQL; the burst tests use real
workers and concurrent enqueuers.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlmodel import Session, col, select

from nekoflow.flow.policy import FlowConfig, FlowPolicy, OnBusy, Rate
from nekoflow.storage.dialogue import Line, utcnow
from nekoflow.storage.turns import TurnRun, TurnStage
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline
from nekoflow.turns.stages import llm_messages

from .conftest import wait_for


def event(text: str, session: str = "f1", message_id: str | None = None, **meta) -> dict:
    ev = {"session_id": session, "message": text, "user_id": "u1", "display_name": "莱姆"}
    if message_id:
        ev["message_id"] = message_id
    ev.update(meta)
    return ev


def user_lines(engine, turn_ids: list[str]) -> list[str]:
    with Session(engine) as s:
        rows = s.exec(
            select(Line)
            .where(col(Line.turn_id).in_(turn_ids), Line.attribute == "user")
            .order_by(col(Line.id))
        ).all()
        return [r.content for r in rows]


def policy(deps, **kw) -> None:
    deps.flow = FlowConfig(default=FlowPolicy(**kw))


def test_merge_makes_one_turn_that_answers_every_message(deps, published) -> None:
    policy(deps, on_busy=OnBusy.merge)
    first = submit_turn(deps, "web", event("在吗", message_id="m1"))
    second = submit_turn(deps, "web", event("我想问个问题", message_id="m2"))
    third = submit_turn(deps, "web", event("关于白塔的", message_id="m3"))
    again = submit_turn(deps, "web", event("我想问个问题", message_id="m2"))  # redelivered
    assert first.turn_id == second.turn_id == third.turn_id == again.turn_id
    assert published == [first.turn_id]
    assert run_inline(deps, first.turn_id, sleep=False) == "ok"
    user = llm_messages(deps, first.turn_id)[-1]
    assert user == {"role": "user", "content": "在吗\n我想问个问题\n关于白塔的"}
    assert user_lines(deps.engine, [first.turn_id]) == ["在吗", "我想问个问题", "关于白塔的"]
    assert first.wait(timeout=5) == second.wait(timeout=5) == third.wait(timeout=5)
    # After the turn started, a new message is a turn of its own again.
    fourth = submit_turn(deps, "web", event("谢谢", message_id="m4"))
    assert fourth.turn_id != first.turn_id


def test_merge_joins_the_turn_queued_behind_a_running_one(deps, published) -> None:
    policy(deps, on_busy=OnBusy.merge)
    running = submit_turn(deps, "web", event("第一句"))
    from nekoflow.turns import stages

    stages.dispatch(deps, running.turn_id)  # claimed: running, no longer mergeable
    queued = submit_turn(deps, "web", event("第二句"))
    merged = submit_turn(deps, "web", event("第三句"))
    assert queued.turn_id != running.turn_id and merged.turn_id == queued.turn_id
    assert run_inline(deps, running.turn_id, sleep=False) == "ok"
    assert run_inline(deps, queued.turn_id, sleep=False) == "ok"
    assert user_lines(deps.engine, [running.turn_id, queued.turn_id]) == [
        "第一句",
        "第二句",
        "第三句",
    ]


def test_merge_debounce_holds_the_turn_back(deps) -> None:
    policy(deps, on_busy=OnBusy.merge, debounce_seconds=30, debounce_max_seconds=60)
    handle = submit_turn(deps, "web", event("等等"))
    from nekoflow.turns.runner import execute_stage

    outcome = execute_stage(deps, "dispatch", handle.turn_id)
    assert outcome.kind == "retry" and outcome.delay > 0 and handle.status() == "queued"
    with Session(deps.engine) as s:
        run = s.get(TurnRun, handle.turn_id)
        run.not_before = utcnow() - timedelta(seconds=1)  # the window has passed
        s.add(run)
        s.commit()
    assert execute_stage(deps, "dispatch", handle.turn_id).kind == "ok"


def test_reject_skips_messages_while_the_scope_is_busy(deps) -> None:
    policy(deps, on_busy=OnBusy.reject)
    first = submit_turn(deps, "web", event("一"))
    busy = submit_turn(deps, "web", event("二"))
    other = submit_turn(deps, "web", event("别的会话", session="f2"))
    assert busy.status() == "skipped" and busy.reason == "busy"
    assert other.status() == "queued"
    assert run_inline(deps, first.turn_id, sleep=False) == "ok"
    assert submit_turn(deps, "web", event("三")).status() == "queued"


def test_a_stale_message_is_skipped_when_its_turn_starts(deps, published) -> None:
    policy(deps, max_age_seconds=60)
    old = (utcnow() - timedelta(hours=2)).isoformat()
    handle = submit_turn(deps, "web", event("两小时前的话", metadata={"sent_at": old}))
    fresh = submit_turn(deps, "web", event("现在的话"))
    assert run_inline(deps, handle.turn_id, sleep=False) == "stop"
    assert handle.status() == "skipped" and handle.reason == "stale"
    assert handle.wait(timeout=1) == []
    assert fresh.turn_id in published  # the scope moved on
    assert run_inline(deps, fresh.turn_id, sleep=False) == "ok"


def test_rate_limit_per_user_skips_with_a_reason(deps) -> None:
    policy(deps, rate_limit_user=Rate(count=2, period=60))
    handles = [submit_turn(deps, "web", event(f"第{i}句", session=f"r{i}")) for i in range(3)]
    assert [h.status() for h in handles] == ["queued", "queued", "skipped"]
    assert handles[2].reason == "rate_limited"
    other_user = event("别人", session="r9") | {"user_id": "u2"}
    assert submit_turn(deps, "web", other_user).status() == "queued"


@pytest.mark.parametrize(
    "kw",
    [
        {"on_busy": OnBusy.merge},
        {"on_busy": OnBusy.reject},
        {"on_busy": OnBusy.interrupt},
        {"rate_limit_user": Rate(count=1, period=60)},
        {"on_busy": OnBusy.merge, "rate_limit_user": Rate(count=2, period=60)},
    ],
    ids=["merge", "reject", "interrupt", "rate-limited", "merge+rate-limited"],
)
def test_a_redelivered_message_comes_back_to_its_own_turn(deps, published, kw) -> None:
    """Whatever the policy, a platform's redelivery is never a second turn, a duplicate merged
    line, a ``busy``/``rate_limited`` skip, nor a supersede of the message's own turn."""
    from nekoflow.turns import stages

    policy(deps, **kw)
    first = submit_turn(deps, "web", event("在吗", message_id="d1"))
    queued = submit_turn(deps, "web", event("在吗", message_id="d1"))  # still queued
    assert queued.turn_id == first.turn_id
    stages.dispatch(deps, first.turn_id)  # running: no longer mergeable, the scope is busy
    running = submit_turn(deps, "web", event("在吗", message_id="d1"))
    assert running.turn_id == first.turn_id and first.status() == "running"
    assert published == [first.turn_id]
    assert run_inline(deps, first.turn_id, sleep=False) == "ok"
    assert user_lines(deps.engine, [first.turn_id]) == ["在吗"]
    with Session(deps.engine) as s:
        assert len(s.exec(select(TurnRun)).all()) == 1


# --- real workers, concurrent enqueuers ----------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("size", [3, 10, 50])
def test_a_burst_from_concurrent_enqueuers_is_merged_and_every_message_answered_once(
    live, workers, size: int
) -> None:
    live.flow = FlowConfig(
        default=FlowPolicy(on_busy=OnBusy.merge, debounce_seconds=1.0, debounce_max_seconds=3)
    )
    workers.start(concurrency=2, name="a")
    workers.start(concurrency=2, name="b")
    texts = [f"消息{i:02d}" for i in range(size)]
    handles: list = []
    lock = threading.Lock()

    def send(chunk: list[str]) -> None:
        from tasks import enqueue_turn

        for i, text in enumerate(chunk):
            h = enqueue_turn("web", event(text, session="burst", message_id=text))
            if i % 5 == 0:  # a webhook redelivered now and then
                enqueue_turn("web", event(text, session="burst", message_id=text))
            with lock:
                handles.append(h)

    threads = [threading.Thread(target=send, args=(texts[i::3],)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    turn_ids = sorted({h.turn_id for h in handles})

    def states() -> str:
        with Session(live.engine) as s:
            runs = s.exec(select(TurnRun).where(col(TurnRun.turn_id).in_(turn_ids))).all()
            return "\n".join(
                f"{r.seq} {r.status} {r.stage} pub={r.publishes} nb={r.not_before}" for r in runs
            )

    wait_for(
        lambda: all(h.status() == "done" for h in handles),
        120,
        "every turn",
        lambda: states() + "\n" + workers.logs(),
    )
    assert len(turn_ids) < len(texts), "the burst was merged"
    lines = user_lines(live.engine, turn_ids)
    assert sorted(lines) == sorted(texts), "every message written once, none twice"
    with Session(live.engine) as s:
        replies = s.exec(
            select(TurnStage).where(
                col(TurnStage.turn_id).in_(turn_ids), TurnStage.stage == "apply_deltas"
            )
        ).all()
    assert len(replies) == len(turn_ids)  # one reply per turn, each applied once


def test_interrupt_supersedes_the_running_turn_and_answers_both(deps, published) -> None:
    from nekoflow.storage.turns import DeltaLedger
    from nekoflow.turns.runner import execute_stage

    policy(deps, on_busy=OnBusy.interrupt)
    old = submit_turn(deps, "web", event("给我讲个故事"))
    for stage in ("dispatch", "before_turn", "llm_call", "memory_build"):
        assert execute_stage(deps, stage, old.turn_id).kind == "ok"
    new = submit_turn(deps, "web", event("算了,讲个笑话吧"))
    assert new.turn_id != old.turn_id
    assert old.status() == "superseded" and old.reason == "superseded"
    assert new.turn_id in published  # the scope moved on at once
    # The old turn's chain stops: nothing applied, nothing rendered.
    assert execute_stage(deps, "review", old.turn_id).kind == "stop"
    assert execute_stage(deps, "apply_deltas", old.turn_id).kind == "stop"
    assert run_inline(deps, new.turn_id, sleep=False) == "ok"
    history = [m["content"] for m in llm_messages(deps, new.turn_id)[1:]]
    assert history[-2:] == ["给我讲个故事", "算了,讲个笑话吧"], history  # the model sees both
    assert old.wait(timeout=1) == [] and new.wait(timeout=1)
    with Session(deps.engine) as s:
        assert s.get(DeltaLedger, old.turn_id) is None
        assert s.get(DeltaLedger, new.turn_id) is not None
    assert user_lines(deps.engine, [old.turn_id, new.turn_id]) == [
        "给我讲个故事",
        "算了,讲个笑话吧",
    ]


def test_interrupt_never_undoes_a_turn_past_apply_deltas(deps) -> None:
    policy(deps, on_busy=OnBusy.interrupt)
    done = submit_turn(deps, "web", event("第一句"))
    assert run_inline(deps, done.turn_id, sleep=False) == "ok"
    later = submit_turn(deps, "web", event("第二句"))
    assert done.status() == "done" and later.status() == "queued"


@pytest.mark.parametrize("stages_done", range(7))
def test_interrupt_at_every_stage(deps, stages_done: int) -> None:
    from nekoflow.storage.turns import STAGES, DeltaLedger
    from nekoflow.turns.runner import execute_stage

    policy(deps, on_busy=OnBusy.interrupt)
    old = submit_turn(deps, "web", event("旧消息"))
    for stage in STAGES[:stages_done]:
        assert execute_stage(deps, stage, old.turn_id).kind == "ok"
    new = submit_turn(deps, "web", event("新消息"))
    if stages_done == 0:  # not started: the new message simply joins it
        assert new.turn_id == old.turn_id
    elif stages_done == len(STAGES):  # applied: never undone
        assert old.status() == "done" and new.turn_id != old.turn_id
    else:
        assert old.status() == "superseded" and new.turn_id != old.turn_id
    for h in (old, new):
        run_inline(deps, h.turn_id, sleep=False)
    assert user_lines(deps.engine, list({old.turn_id, new.turn_id})) == ["旧消息", "新消息"]
    with Session(deps.engine) as s:
        applied = {t for t in (old.turn_id, new.turn_id) if s.get(DeltaLedger, t)}
    expected = {old.turn_id, new.turn_id} if stages_done == len(STAGES) else {new.turn_id}
    assert applied == expected
    assert new.status() == "done"


def test_apply_supersedes_its_turn_when_a_newer_message_was_written_first(
    deps, published, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``interrupt``: apply_deltas checks for a newer turn under the scope's lock, so a message
    written before the apply supersedes the turn even when its enqueuer never superseded it (it
    died between the write and the supersede, or came too late)."""
    from nekoflow.storage.turns import DeltaLedger
    from nekoflow.turns import enqueue
    from nekoflow.turns.stages import STAGE_FUNCS

    policy(deps, on_busy=OnBusy.interrupt)
    first = submit_turn(deps, "web", event("在吗", message_id="i1"))
    for stage in ("dispatch", "before_turn", "llm_call", "memory_build", "review"):
        STAGE_FUNCS[stage](deps, first.turn_id)
    monkeypatch.setattr(enqueue, "supersede_before", lambda *args, **kwargs: None)
    second = submit_turn(deps, "web", event("人呢", message_id="i2"))
    assert second.turn_id != first.turn_id and first.status() == "running"
    assert run_inline(deps, first.turn_id, sleep=False) == "stop"  # from apply_deltas
    assert first.status() == "superseded"
    assert published[-1] == second.turn_id  # the scope was handed on to the newer turn
    assert run_inline(deps, second.turn_id, sleep=False) == "ok"
    with Session(deps.engine) as s:
        run = s.get(TurnRun, first.turn_id)
        assert (run.delivery_status, run.reason) in (
            (None, "superseded"),
            ("not_sent", "superseded"),
        )
        ledger = s.exec(select(DeltaLedger.turn_id)).all()
    assert ledger == [second.turn_id]
    assert user_lines(deps.engine, [first.turn_id, second.turn_id]) == ["在吗", "人呢"]
