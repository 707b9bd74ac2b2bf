"""Conversation flow under races, with real workers, real Redis and the loopback Telegram Bot API:
``reject`` admits one of two simultaneous first messages, ``interrupt`` catches a message that
arrives while the running turn is being claimed, turns that end without a reply close their
delivery (the sweeper leaves them alone), and merged messages keep their boundaries.

Races are driven by locks the test holds (the scope's lock, the stage table) and released once
the racers are seen waiting on them — never by sleeps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.flow.policy import FlowConfig, FlowPolicy, OnBusy
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.turns import FINISHED, TurnRun
from tests.conftest import DB_BACKENDS
from tests.platforms.telegram.conftest import tg_update
from tests.platforms.telegram.fake_botapi import FakeBotApi

from .conftest import wait_for
from .llm_server import FakeLLM, completion

pytestmark = pytest.mark.slow

GROUP = -100888
CHAT = 4242  # a private chat


def group_msg(text_: str, message_id: int, *, name: str = "莱姆", user_id: int = 777) -> dict:
    update = tg_update(
        GROUP,
        text_,
        chat_type="supergroup",
        message_id=message_id,
        reply_to_bot=True,
        user_id=user_id,
    )
    update["message"]["from"]["first_name"] = name
    return update


def private_msg(text_: str, message_id: int) -> dict:
    return tg_update(CHAT, text_, message_id=message_id)


def configure(live, tmp_path: Path, body: str, **policy: Any) -> dict[str, str]:
    """The same flow policy in this enqueuer and in the workers' config.ini."""
    live.flow = FlowConfig(default=FlowPolicy(**policy))
    path = tmp_path / "flow.ini"
    path.write_text("[conversation_flow]\n" + body, encoding="utf-8")
    return {"NEKOFLOW_RUNTIME_CONFIG_PATH": str(path)}


def runs(engine: Engine) -> list[TurnRun]:
    with Session(engine) as s:
        return list(s.exec(select(TurnRun).order_by(col(TurnRun.created_at))).all())


def all_finished(engine: Engine, count: int) -> Callable[[], bool]:
    def check() -> bool:
        rows = [r for r in runs(engine) if r.seq is not None]
        return len(rows) >= count and all(r.status in FINISHED for r in rows)

    return check


def delivered(engine: Engine) -> Callable[[], bool]:
    def check() -> bool:
        rows = runs(engine)
        return bool(rows) and all(
            r.status in FINISHED and r.delivery_status not in ("pending", "sending") for r in rows
        )

    return check


@pytest.fixture
def sweep_clock(live) -> Callable[[], list[str]]:
    """The beat sweeper's delivery pass, run here with the clock 10 minutes ahead."""
    from tasks.deliver import republish_deliveries

    return lambda: republish_deliveries(now=utcnow() + timedelta(minutes=10))


# --- 1. reject: two simultaneous first messages --------------------------------------------


class ScopeLockHeld:
    """The test holds a scope's lock (its counter row, inserted in an open transaction: a
    row lock on PostgreSQL, the write lock on SQLite); enqueuer threads are counted as they
    reach the statement that takes that lock."""

    def __init__(self, engine: Engine, scope: str, racers: int) -> None:
        self.engine = engine
        self.scope = scope
        self.racers = racers
        self.arrived = 0
        self.all_arrived = threading.Event()
        self._lock = threading.Lock()
        self.conn = engine.connect()
        self.owner = threading.current_thread()  # the racers are other threads (or the API's)

    def _seen(self, conn, cursor, statement: str, *args: Any) -> None:
        if "scope_counter" in statement and threading.current_thread() is not self.owner:
            with self._lock:
                self.arrived += 1
                if self.arrived >= self.racers:
                    self.all_arrived.set()

    def __enter__(self) -> ScopeLockHeld:
        self.conn.execute(
            text("INSERT INTO scope_counter (scope_id, last_seq) VALUES (:s, 0)"),
            {"s": self.scope},
        )
        event.listen(self.engine, "before_cursor_execute", self._seen)
        return self

    def _blocked_on_pg(self) -> bool:
        """PostgreSQL (whose hot-path statements bypass the cursor events): every racer's
        backend waits for the test's."""
        holder = self.conn.execute(text("SELECT pg_backend_pid()")).scalar()
        with self.engine.connect() as watcher:
            blocked = watcher.execute(
                text("SELECT count(*) FROM pg_stat_activity WHERE :p = ANY(pg_blocking_pids(pid))"),
                {"p": holder},
            ).scalar()
        return int(blocked or 0) >= self.racers

    def release(self) -> None:
        if self.engine.dialect.name == "postgresql":
            wait_for(self._blocked_on_pg, 60, "the racers waiting on the scope's lock", str)
        else:
            assert self.all_arrived.wait(60), "the racers never reached the scope's lock"
        self.conn.commit()

    def __exit__(self, *exc: object) -> None:
        event.remove(self.engine, "before_cursor_execute", self._seen)
        self.conn.close()


def race(calls: list[Callable[[], Any]], held: ScopeLockHeld) -> list[Any]:
    """Start ``calls`` together (a barrier), release the held lock once each has reached it."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        results[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,), name=f"racer{i}") for i in range(len(calls))]
    for t in threads:
        t.start()
    held.release()
    for t in threads:
        t.join(60)
    return results


def test_reject_admits_one_of_two_simultaneous_first_messages(
    live, workers, tg, bot_api: FakeBotApi, tmp_path
) -> None:
    from tasks import enqueue_turn

    env = configure(live, tmp_path, "on_busy = reject\n", on_busy=OnBusy.reject)
    scope = "telegram:group:-100888"
    with ScopeLockHeld(live.engine, scope, racers=2) as held:
        handles = race(
            [
                lambda: enqueue_turn("telegram", group_msg("在吗", 11), bot="neko"),
                lambda: enqueue_turn("telegram", group_msg("人呢", 12, name="小明"), bot="neko"),
            ],
            held,
        )
    assert sorted(h.status() if not h.is_skipped else h.reason for h in handles) == [
        "busy",
        "queued",
    ]
    assert [r.scope_id for r in runs(live.engine)] == [scope]
    workers.start(extra_env={**tg, **env})
    wait_for(delivered(live.engine), 90, "the admitted turn", workers.logs)
    assert [r.status for r in runs(live.engine)] == ["done"]
    assert len(bot_api.texts(GROUP)) == 1


def test_reject_web_chat_admits_one_of_two_simultaneous_posts(live, workers, tmp_path) -> None:
    from fastapi.testclient import TestClient

    from nekoflow.api import create_app

    env = configure(live, tmp_path, "on_busy = reject\n", on_busy=OnBusy.reject)
    token = "test-token-0123456789"
    settings = live.settings.model_copy(update={"api_token": SecretStr(token)})
    app = create_app(settings, engine=live.engine, turn_deps=live)  # publishes to the test broker
    client = TestClient(app, headers={"Authorization": f"Bearer {token}"})
    scope = "web:conversation:race"

    def post(text_: str) -> Callable[[], Any]:
        body = {"session_id": "race", "message": text_, "user_id": "u1", "wait": 0}
        return lambda: client.post("/api/web/chat", json=body).json()

    with ScopeLockHeld(live.engine, scope, racers=2) as held:
        replies = race([post("在吗"), post("人呢")], held)
    assert sorted(r["status"] for r in replies) == ["queued", "skipped"], replies
    assert [r["reason"] for r in replies if r["status"] == "skipped"] == ["busy"]
    workers.start(extra_env=env)
    wait_for(all_finished(live.engine, 1), 90, "the admitted turn", workers.logs)
    assert [r.status for r in runs(live.engine)] == ["done"]


# --- 2. interrupt: a message while turn 1 is being claimed and dispatched -------------------


def _pg_waiters(conn, sql: str, params: dict[str, Any]) -> int:
    return int(conn.execute(text(sql), params).scalar() or 0)


# Holds the dispatch stage open with a PostgreSQL table lock: it runs on PostgreSQL only (SQLite
# has one writer at a time, so a claim and an insert never interleave there).
@pytest.mark.parametrize("db_url", [b for b in DB_BACKENDS if b == "postgres"], indirect=True)
def test_interrupt_catches_a_message_during_the_claim(
    live, workers, tg, bot_api: FakeBotApi, tmp_path, sweep_clock
) -> None:
    from tasks import enqueue_turn

    env = configure(live, tmp_path, "on_busy = interrupt\n", on_busy=OnBusy.interrupt)
    holder = live.engine.connect()
    watcher = live.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    try:
        # Dispatch claims turn 1 (its row locked until the dispatch commits) and then waits
        # to store its result: the stage table is locked by the test.
        holder.execute(text("LOCK TABLE turn_stage IN EXCLUSIVE MODE"))
        workers.start(extra_env={**tg, **env})
        first = enqueue_turn("telegram", private_msg("在吗", 21), bot="neko")
        waiting = "SELECT pid FROM pg_locks WHERE NOT granted AND relation = 'turn_stage'::regclass"
        wait_for(
            lambda: _pg_waiters(watcher, waiting, {}) > 0,
            60,
            "dispatch waiting",
            workers.logs,
        )
        dispatcher = _pg_waiters(watcher, waiting, {})
        result: list[Any] = []
        second = threading.Thread(
            target=lambda: result.append(
                enqueue_turn("telegram", private_msg("人呢", 22), bot="neko")
            )
        )
        second.start()
        # The second message waits for the claim in progress (the merge's UPDATE of turn 1).
        blocked = "SELECT count(*) FROM pg_stat_activity WHERE :p = ANY(pg_blocking_pids(pid))"
        wait_for(
            lambda: _pg_waiters(watcher, blocked, {"p": dispatcher}) > 0 or not second.is_alive(),
            60,
            "the second message waiting on the claim",
            workers.logs,
        )
        holder.commit()  # the dispatch commits; the second message goes on
        second.join(60)
    finally:
        holder.close()
        watcher.close()
    wait_for(delivered(live.engine), 120, "both messages answered", workers.logs)
    by_id = {r.turn_id: r for r in runs(live.engine)}
    assert by_id[first.turn_id].status == "superseded"
    assert (by_id[first.turn_id].delivery_status, by_id[first.turn_id].delivery_reason) == (
        "not_sent",
        "superseded",
    )
    assert result[0].turn_id != first.turn_id
    assert by_id[result[0].turn_id].status == "done"
    assert len(bot_api.texts(CHAT)) == 1, "one reply for the burst"
    assert sweep_clock() == []


# --- 3. turns that end without a reply close their delivery -------------------------------


def test_stale_and_quota_skips_close_their_delivery_and_the_sweeper_leaves_them(
    live, workers, tg, bot_api: FakeBotApi, tmp_path, sweep_clock
) -> None:
    from tasks import enqueue_turn

    # Telegram's test messages are dated 2023: with a max age they are stale.
    env = configure(live, tmp_path, "max_age_seconds = 60\n", max_age_seconds=60)
    workers.start(extra_env={**tg, **env})
    stale = enqueue_turn("telegram", private_msg("早上好", 31), bot="neko")
    wait_for(delivered(live.engine), 90, "the stale turn", workers.logs)
    workers.stop_all()
    env = configure(live, tmp_path, "daily_tokens_scope = 1\n", daily_tokens_scope=1)
    workers.start(extra_env={**tg, **env}, name="q")
    used = enqueue_turn("telegram", group_msg("第一句", 41), bot="neko")
    wait_for(delivered(live.engine), 90, "the first turn", workers.logs)
    over = enqueue_turn("telegram", group_msg("第二句", 42), bot="neko")
    wait_for(delivered(live.engine), 90, "the turn over quota", workers.logs)
    by_id = {r.turn_id: r for r in runs(live.engine)}
    assert (by_id[stale.turn_id].reason, by_id[stale.turn_id].delivery_status) == (
        "stale",
        "not_sent",
    )
    assert by_id[stale.turn_id].delivery_reason == "stale"
    assert by_id[used.turn_id].delivery_status == "sent"
    assert (by_id[over.turn_id].reason, by_id[over.turn_id].delivery_status) == (
        "quota_exceeded",
        "not_sent",
    )
    assert sweep_clock() == []
    assert {r.delivery_status for r in runs(live.engine)} == {"not_sent", "sent"}


# --- 4. merged and interrupted messages keep their boundaries ------------------------------


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    """A loopback model; calls wait while ``hold`` is set (released by the test)."""
    gate = threading.Event()
    gate.set()

    def script(body: dict[str, Any], n: int):
        gate.wait(60)
        return 200, completion(f"回答{n}"), {}, 0.0

    with FakeLLM(script) as fake:
        fake.gate = gate  # type: ignore[attr-defined]
        yield fake


def _user_messages(call: dict[str, Any]) -> list[str]:
    return [m["content"] for m in call["messages"] if m["role"] == "user"]


def test_a_merged_group_burst_names_its_speakers_and_quotes_the_last_message(
    live, workers, tg, bot_api: FakeBotApi, tmp_path, llm: FakeLLM
) -> None:
    from tasks import enqueue_turn

    env = configure(live, tmp_path, "on_busy = merge\n", on_busy=OnBusy.merge)
    burst = [
        group_msg("在吗", 51),
        group_msg("我想问你个问题", 52),
        group_msg("你喜欢猫吗", 53, name="小明", user_id=888),
    ]
    handles = [enqueue_turn("telegram", u, bot="neko") for u in burst]
    assert len({h.turn_id for h in handles}) == 1  # queued before any worker: one turn
    workers.start(extra_env={**tg, **env, **llm.env()})
    wait_for(delivered(live.engine), 90, "the merged turn", workers.logs)
    assert _user_messages(llm.calls[0])[-1] == "莱姆:在吗\n莱姆:我想问你个问题\n小明:你喜欢猫吗"
    sent = bot_api.sent(GROUP)
    assert len(sent) == 1 and sent[0]["reply_parameters"]["message_id"] == 53
    enqueue_turn("telegram", group_msg("然后呢", 54), bot="neko")
    wait_for(lambda: len(llm.calls) >= 2, 90, "the next turn", workers.logs)
    history = _user_messages(llm.calls[1])
    assert "莱姆:在吗\n莱姆:我想问你个问题\n小明:你喜欢猫吗" in history, history


def test_interrupted_messages_stay_separate_lines_in_the_next_turns(
    live, workers, tg, bot_api: FakeBotApi, tmp_path, llm: FakeLLM, sweep_clock
) -> None:
    from tasks import enqueue_turn

    env = configure(live, tmp_path, "on_busy = interrupt\n", on_busy=OnBusy.interrupt)
    llm.gate.clear()  # type: ignore[attr-defined]  # turn 1 holds in llm_call
    workers.start(extra_env={**tg, **env, **llm.env()})
    first = enqueue_turn("telegram", private_msg("在吗", 61), bot="neko")
    wait_for(lambda: len(llm.calls) >= 1, 90, "turn 1 calling the model", workers.logs)
    second = enqueue_turn("telegram", private_msg("我想问你个问题", 62), bot="neko")
    llm.gate.set()  # type: ignore[attr-defined]
    wait_for(delivered(live.engine), 90, "the interrupting turn", workers.logs)
    by_id = {r.turn_id: r for r in runs(live.engine)}
    assert by_id[first.turn_id].status == "superseded"
    assert by_id[first.turn_id].delivery_status == "not_sent"
    assert by_id[second.turn_id].status == "done"
    assert sweep_clock() == []
    enqueue_turn("telegram", private_msg("你喜欢猫吗", 63), bot="neko")
    wait_for(lambda: len(bot_api.texts(CHAT)) >= 2, 90, "the third turn", workers.logs)
    history = _user_messages(llm.calls[-1])
    assert "在吗\n我想问你个问题" in history, history
