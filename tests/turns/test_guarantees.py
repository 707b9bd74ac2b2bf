"""The turn pipeline's guarantees against real worker processes, Redis and the databases:
per-scope order, exactly-once under SIGKILL at every stage, nothing lost, privacy in args."""

from __future__ import annotations

import itertools
import threading
import time

import redis
from sqlmodel import Session, col, select

from nekoflow.review.models import RELATIONSHIP_DIMENSIONS
from nekoflow.storage.dialogue import Line, Role
from nekoflow.storage.turns import STAGES, DeltaLedger, Relationship, TurnRun, TurnStage
from nekoflow.turns import store
from nekoflow.turns.characters import clamp_dimension, initial_relationship
from tasks import app, enqueue_turn

from .conftest import wait_for


def web_event(text: str, session: str) -> dict:
    return {
        "session_id": session,
        "message": text,
        "user_id": f"u-{session}",
        "display_name": "莱姆",
    }


def all_finished(engine, turn_ids: list[str]) -> bool:
    with Session(engine) as s:
        runs = s.exec(select(TurnRun).where(col(TurnRun.turn_id).in_(turn_ids))).all()
        return len(runs) == len(turn_ids) and all(r.status in ("done", "failed") for r in runs)


def test_fifty_turns_in_one_scope_run_in_order_while_others_progress(live, workers) -> None:
    workers.start(concurrency=2, name="a")
    workers.start(concurrency=2, name="b")
    handles: dict[str, list] = {"busy": [], "x": [], "y": []}
    lock = threading.Lock()

    def fire(scope: str, i: int) -> None:
        h = enqueue_turn("web", web_event(f"{scope} 第{i}句", scope))
        with lock:
            handles[scope].append(h)

    threads = [threading.Thread(target=fire, args=("busy", i)) for i in range(50)]
    threads += [threading.Thread(target=fire, args=(s, i)) for s in ("x", "y") for i in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = [h.turn_id for hs in handles.values() for h in hs]
    wait_for(lambda: all_finished(live.engine, ids), 180, "all turns to finish", workers.logs)
    with Session(live.engine) as s:
        busy = s.exec(
            select(TurnRun)
            .where(TurnRun.scope_id == "web:conversation:busy")
            .order_by(col(TurnRun.seq))
        ).all()
        assert [r.status for r in busy] == ["done"] * 50
        # strictly one after another, in arrival (seq) order
        for prev, nxt in itertools.pairwise(busy):
            assert prev.finished_at <= nxt.started_at, (prev.seq, nxt.seq)
        # the dialogue tree holds the user lines in arrival order
        save_id = busy[0].save_id
        users = s.exec(
            select(Line)
            .where(Line.save_id == save_id, Line.attribute == "user")
            .order_by(col(Line.id))
        ).all()
        assert [u.turn_id for u in users] == [r.turn_id for r in busy]
        others = s.exec(
            select(TurnRun).where(
                col(TurnRun.scope_id).in_(["web:conversation:x", "web:conversation:y"])
            )
        ).all()
        assert all(r.status == "done" for r in others)
        # other scopes were not held up behind the busy one
        assert min(r.finished_at for r in others) < busy[-1].finished_at


def _replayed_relationship(engine, role: Role, turn_ids: list[str]) -> dict[str, int]:
    values = initial_relationship(role)
    with Session(engine) as s:
        for tid in turn_ids:
            review = s.get(TurnStage, (tid, "review")).result
            delta = review["relationship_delta"]
            for dim in RELATIONSHIP_DIMENSIONS:
                values[dim] = clamp_dimension(values[dim] + delta[dim])
    return values


def test_sigkill_at_every_stage_loses_and_duplicates_nothing(
    live, workers, worker_env, redis_client: redis.Redis, role: Role
) -> None:
    crash_env = {
        "NEKOFLOW_BROKER_VISIBILITY_TIMEOUT": "2",
        "NEKOFLOW_TURN_LEASE_SECONDS": "4",
        "NEKOFLOW_LLM_TIMEOUT": "3",
        "NEKOFLOW_SWEEP_INTERVAL_SECONDS": "1",
    }
    points = [f"crash:{p}:{stage}" for stage in STAGES for p in ("before", "after")]
    for key in points:
        redis_client.set(key, 1)
    proc = workers.start(
        app="tests.turns.crash_app", concurrency=1, beat=True, extra_env=crash_env, name="crash0"
    )
    scopes = ["k1", "k1", "k2", "k1", "k2"]
    handles = [
        enqueue_turn("web", web_event(f"第{i}句 谢谢你 喜欢你", sc)) for i, sc in enumerate(scopes)
    ]
    ids = [h.turn_id for h in handles]
    restarts = 0
    deadline = time.monotonic() + 240
    while not all_finished(live.engine, ids):
        assert time.monotonic() < deadline, f"turns did not finish\n{workers.logs()}"
        if proc.poll() is not None:  # the hook killed the worker: restart it, like a supervisor
            restarts += 1
            proc = workers.start(
                app="tests.turns.crash_app",
                concurrency=1,
                beat=True,
                extra_env=crash_env,
                name=f"crash{restarts}",
            )
        time.sleep(0.2)
    crashed = [c.decode() for c in redis_client.lrange("crash:log", 0, -1)]
    assert sorted(crashed) == sorted(p.removeprefix("crash:") for p in points), crashed
    assert restarts >= len(points)
    with Session(live.engine) as s:
        runs = {r.turn_id: r for r in s.exec(select(TurnRun)).all()}
        assert all(runs[t].status == "done" for t in ids), {t: runs[t].reason for t in ids}
        assert len(s.exec(select(DeltaLedger)).all()) == len(ids)
        for tid in ids:
            lines = s.exec(select(Line).where(Line.turn_id == tid)).all()
            segments = s.get(TurnStage, (tid, "memory_build")).result["segments"]
            assert [ln.attribute for ln in lines] == ["user"] + ["assistant"] * len(segments)
        for scope in ("k1", "k2"):
            scope_id = f"web:conversation:{scope}"
            order = [
                r.turn_id
                for r in sorted(runs.values(), key=lambda r: r.seq or 0)
                if r.scope_id == scope_id
            ]
            rel = s.get(Relationship, (role.id, scope_id))
            assert rel.turns == len(order)
            assert {d: getattr(rel, d) for d in RELATIONSHIP_DIMENSIONS} == _replayed_relationship(
                live.engine, role, order
            )


def test_lost_messages_are_republished_by_the_sweeper(live, workers, redis_client) -> None:
    handle = enqueue_turn("web", web_event("消息会丢", "lost"))
    # the broker loses every queued message (e.g. a Redis restart without persistence)
    if app.conf.broker_url.startswith("amqp"):
        app.control.purge()
    else:
        redis_client.flushdb()
    assert handle.status() == "queued"
    with Session(live.engine) as s:  # make the turn look stuck past its lease
        run = s.get(TurnRun, handle.turn_id)
        run.updated_at = run.updated_at.replace(year=2000)
        s.add(run)
        s.commit()
    workers.start(beat=True, extra_env={"NEKOFLOW_SWEEP_INTERVAL_SECONDS": "1"})
    handle.wait(timeout=60)
    assert handle.status() == "done"
    assert store.get_run(live.engine, handle.turn_id).publishes >= 2


def test_recommended_layout_survives_losing_the_llm_worker(live, workers, worker_env) -> None:
    """README's deployment (turns on prefork, llm on a thread pool) against a model with
    latency: SIGKILL the llm worker with calls in flight; a new one finishes every turn, once
    each, in order per scope."""
    from .llm_server import FakeLLM, completion

    script = lambda body, n: (200, completion("【开心】好呀(点头)"), {}, 0.3)  # noqa: E731
    with FakeLLM(script) as llm:
        env = llm.env(
            NEKOFLOW_BROKER_VISIBILITY_TIMEOUT="3",
            NEKOFLOW_TURN_LEASE_SECONDS="6",
            NEKOFLOW_LLM_TIMEOUT="4",
            NEKOFLOW_SWEEP_INTERVAL_SECONDS="1",
        )
        workers.start(queues="turns,outbound", beat=True, extra_env=env, name="t")
        first = workers.start(
            queues="llm", pool="threads", concurrency=16, extra_env=env, name="l0"
        )
        scopes = [f"r{i % 4}" for i in range(16)]
        ids = [
            enqueue_turn("web", web_event(f"第{i}句", sc)).turn_id for i, sc in enumerate(scopes)
        ]
        wait_for(lambda: len(llm.calls) >= 3, 60, "calls in flight", workers.logs)
        workers.kill(first)
        workers.start(queues="llm", pool="threads", concurrency=16, extra_env=env, name="l1")
        wait_for(lambda: all_finished(live.engine, ids), 180, "all turns", workers.logs)
    with Session(live.engine) as s:
        runs = s.exec(select(TurnRun).where(col(TurnRun.turn_id).in_(ids))).all()
        assert all(r.status == "done" for r in runs), {r.turn_id: r.reason for r in runs}
        assert len(s.exec(select(DeltaLedger)).all()) == len(ids)
        for scope in set(scopes):
            ordered = sorted(
                (r for r in runs if r.scope_id == f"web:conversation:{scope}"), key=lambda r: r.seq
            )
            for prev, nxt in itertools.pairwise(ordered):
                assert prev.finished_at <= nxt.started_at
