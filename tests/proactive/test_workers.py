"""The character writes first, with real Celery workers, real Redis, PostgreSQL (SQLite when
none is configured) and the loopback Telegram Bot API; one worker set for the whole module and
the clock injected into the sweep (never slept):

- the card's greeting arrives once, before the first reply (also when the worker that sent it
  is SIGKILLed before acknowledging, and the delivery is redelivered), and never again;
- a silent chat gets its follow-up after the gap, not in quiet hours, and no more than K in a
  row; the user writing again starts a new silence;
- a promised reminder fires once at its time (quiet hours or not), and not after the user
  calls it off;
- two concurrent sweeps (and one in this process) and a worker SIGKILLed between starting a
  schedule's turn and marking it fired never send a proactive message twice.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis
from sqlalchemy import text
from sqlmodel import Session, col, select

from nekoflow.proactive import store as pstore
from nekoflow.proactive.tables import OPEN_STATES, ProactiveSchedule
from nekoflow.settings import Settings
from nekoflow.storage import create_all, make_engine
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.proactive_sweep import LEASE_SECONDS, sweep_due
from tests.conftest import PG_URL, REDIS_URL, XDIST_WORKER
from tests.platforms.telegram import conftest as telegram
from tests.platforms.telegram.conftest import tg_update
from tests.platforms.telegram.fake_botapi import FakeBotApi
from tests.turns.conftest import REPO, Workers, wait_for

GREETING = "你回来啦,{{user}}!今天也要一起玩吗?"
CONFIG = """
[proactive_telegram]
follow_up_after = 1h
follow_up_jitter = 0
max_unanswered = 2
quiet_hours = 23:00-08:00
timezone = UTC
reminders = true
"""


class Env:
    """What the module's tests share: the engine, the fake, the workers and this process's
    deps (an enqueuer publishing to the test broker)."""

    def __init__(self, engine: Any, fake: FakeBotApi, workers: Workers, deps: TurnDeps) -> None:
        self.engine, self.fake, self.workers, self.deps = engine, fake, workers, deps
        self.env: dict[str, str] = {}
        self.proc: Any = None

    def start_worker(self, name: str) -> None:
        self.proc = self.workers.start(
            app="tests.proactive.crash_app", concurrency=2, extra_env=self.env, name=name
        )

    def runs(self, chat: int) -> list[TurnRun]:
        with Session(self.engine) as s:
            rows = s.exec(select(TurnRun).where(TurnRun.channel == "telegram")).all()
        mine = [r for r in rows if r.request.get("conversation_id") == str(chat)]
        return sorted(mine, key=lambda r: r.seq or 0)

    def settled(self, chat: int, turns: int) -> bool:
        runs = self.runs(chat)
        return len(runs) == turns and all(r.delivery_status in ("sent", "failed") for r in runs)

    def wait_settled(self, chat: int, turns: int) -> None:
        wait_for(
            lambda: self.settled(chat, turns),
            60,
            f"{turns} delivered turn(s) in chat {chat}",
            lambda: (
                self.workers.logs()
                + str([(r.status, r.stage, r.delivery_status) for r in self.runs(chat)])
            ),
        )

    def say(self, chat: int, words: str) -> None:
        from tasks import enqueue_turn

        # one user per chat: a private chat's scope is its user
        enqueue_turn("telegram", tg_update(chat, words, user_id=chat), bot="neko")

    def schedules(self, chat: int, states: tuple[str, ...] = OPEN_STATES) -> list[Any]:
        rows = pstore.list_schedules(self.engine, states=states)
        return [r for r in rows if r.request.get("conversation_id") == str(chat)]

    def sweep(self, now: datetime) -> dict[str, Any]:
        """One sweep on a worker, with the clock at ``now``."""
        from tasks.proactive import proactive_sweep

        return proactive_sweep.apply_async(args=[now.isoformat()]).get(timeout=60)

    def reminders(self, chat: int) -> list[TurnRun]:
        """The chat's reminder turns."""
        meta = [(r, r.request.get("metadata", {}).get("proactive") or {}) for r in self.runs(chat)]
        return [r for r, p in meta if p.get("kind") == "reminder"]

    def fired(self, chat: int, report: dict[str, Any]) -> list[str]:
        """The turns a sweep started in ``chat`` (other chats' follow-ups may be due too)."""
        mine = {r.turn_id for r in self.runs(chat)}
        return [t for t in report["fired"] if t in mine]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    tmp = tmp_path_factory.mktemp("proactive")
    schema = None
    if PG_URL:
        schema = f"t_{uuid.uuid4().hex[:12]}"
        admin = make_engine(PG_URL)
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        admin.dispose()
        sep = "&" if "?" in PG_URL else "?"
        db_url = f"{PG_URL}{sep}options=-csearch_path%3D{schema}"
    else:
        db_url = f"sqlite:///{tmp / 'test.db'}"
    engine = make_engine(db_url)
    create_all(engine)
    with Session(engine) as s:
        role = Role.new("钦灵", profile_prompt="你叫钦灵,是一只猫娘。")
        role.card = {"name": "钦灵", "first_mes": GREETING, "description": "猫娘"}
        s.add(role)
        s.commit()
    client = redis.Redis.from_url(REDIS_URL)
    client.flushdb()
    (tmp / "config.ini").write_text(CONFIG, encoding="utf-8")
    fake = FakeBotApi({telegram.TOKEN})
    tg = {
        "NEKOFLOW_TELEGRAM_API_BASE_URL": fake.url,
        "NEKOFLOW_TELEGRAM_TOKEN": telegram.TOKEN,
        "NEKOFLOW_TELEGRAM_SECRET_TOKEN": telegram.SECRET,
        "NEKOFLOW_TELEGRAM_MODE": "webhook",
        "NEKOFLOW_TELEGRAM_BOT_NAME": "neko",
        "NEKOFLOW_TELEGRAM_TIMEOUT": "5",
    }
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    worker_env = (
        base
        | tg
        | {
            "NEKOFLOW_DATABASE_URL": db_url,
            "NEKOFLOW_REDIS_URL": REDIS_URL,
            "NEKOFLOW_BROKER_URL": os.environ.get("NEKOFLOW_TEST_BROKER_URL") or REDIS_URL,
            "NEKOFLOW_RESULT_BACKEND": REDIS_URL,
            "NEKOFLOW_REDIS_PREFIX": f"nfpro{XDIST_WORKER}",
            "NEKOFLOW_RUNTIME_CONFIG_PATH": str(tmp / "config.ini"),
            # a sweep task lost with its worker comes back quickly
            "NEKOFLOW_BROKER_VISIBILITY_TIMEOUT": "2",
            "PYTHONPATH": str(REPO),
        }
    )
    workers = Workers(worker_env, tmp)
    mp = pytest.MonkeyPatch()
    for key, value in tg.items():
        mp.setenv(key, value)
    telegram.reset_caches()
    from tasks.runtime import set_deps
    from tasks.turns import publish_turn

    settings = Settings(
        database_url=db_url,
        redis_url=REDIS_URL,
        broker_url=worker_env["NEKOFLOW_BROKER_URL"],
        result_backend=REDIS_URL,
        redis_prefix=worker_env["NEKOFLOW_REDIS_PREFIX"],
        runtime_config_path=str(tmp / "config.ini"),
    )
    deps = TurnDeps.from_settings(settings, engine=engine, publish=publish_turn)
    set_deps(deps)
    shared = Env(engine, fake, workers, deps)
    shared.env = worker_env
    shared.start_worker("w0")
    try:
        yield shared
    finally:
        workers.stop_all()
        set_deps(None)
        mp.undo()
        telegram.reset_caches()
        fake.close()
        client.close()
        engine.dispose()
        if schema is not None:
            admin = make_engine(PG_URL)
            with admin.begin() as conn:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            admin.dispose()


def test_greeting_arrives_once_before_the_first_reply(env: Env) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    client.set("crash:after:deliver", 1)  # sent, then the worker dies before the ack
    env.say(4001, "你好呀")
    wait_for(lambda: env.proc.poll() is not None, 60, "the SIGKILL", env.workers.logs)
    assert client.lrange("crash:log", 0, -1) == [b"after:deliver"]
    client.delete("crash:log")
    client.close()
    env.start_worker("w0-restarted")
    # The deliver task comes back to the new worker (broker redelivery) or, as beat's sweeper
    # does, is published again: either way each chunk goes out once (no beat in this module).
    from tasks.deliver import republish_deliveries

    nudged = [0.0]

    def delivered() -> bool:
        if time.monotonic() - nudged[0] > 1.0:
            nudged[0] = time.monotonic()
            republish_deliveries(now=datetime.now(UTC) + timedelta(minutes=5))
        return env.settled(4001, 1)

    wait_for(delivered, 60, "the greeting and the reply", env.workers.logs)
    (first,) = env.runs(4001)
    texts = env.fake.texts(4001)
    assert texts[0] == "你回来啦,莱姆!今天也要一起玩吗?"  # macros rendered, sent first
    assert len(texts) == len(first.rendered or []) >= 2  # then the reply
    env.say(4001, "我们聊聊天吧")
    env.wait_settled(4001, 2)
    time.sleep(0.3)  # a duplicate would arrive now
    second = env.runs(4001)[1]
    assert env.fake.texts(4001) == texts + [m["content"] for m in second.rendered or []]
    assert texts[0] not in env.fake.texts(4001)[len(texts) :]  # never again


def _next(at: datetime, hour: int) -> datetime:
    """The first ``hour``:00 UTC at or after ``at``."""
    day = at.replace(hour=hour, minute=0, second=0, microsecond=0)
    return day if day >= at else day + timedelta(days=1)


def test_follow_up_after_silence_quiet_hours_and_k_unanswered(env: Env) -> None:
    chat = 4002
    env.say(chat, "我去忙啦")
    env.wait_settled(chat, 1)
    sent = len(env.fake.texts(chat))
    (row,) = env.schedules(chat)
    assert (row.kind, row.n, row.state) == ("follow_up", 1, "due")
    due = row.due_at
    assert env.fired(chat, env.sweep(due - timedelta(minutes=1))) == []  # not yet
    quiet = _next(due, 23) + timedelta(minutes=30)  # 23:30 UTC: in the quiet hours
    assert row.id in env.sweep(quiet)["later"]
    assert len(env.runs(chat)) == 1
    moved = pstore.get(env.engine, row.id)
    assert moved is not None and moved.due_at == _next(quiet, 8)  # waits for 08:00
    morning = _next(quiet, 8) + timedelta(minutes=5)
    assert len(env.fired(chat, env.sweep(morning))) == 1
    env.wait_settled(chat, 2)
    proactive = env.runs(chat)[1]
    assert proactive.request["metadata"]["proactive"]["n"] == 1
    assert proactive.request["content"] == "" and proactive.status == "done"
    assert len(env.fake.texts(chat)) == sent + len(proactive.rendered or [])
    # the second in a row, an hour later; then it stops (max_unanswered = 2)
    (second,) = env.schedules(chat)
    assert second.n == 2 and second.due_at == morning + timedelta(hours=1)
    assert len(env.fired(chat, env.sweep(second.due_at))) == 1
    env.wait_settled(chat, 3)
    assert env.schedules(chat) == []
    assert env.fired(chat, env.sweep(morning + timedelta(days=3))) == []
    assert len(env.runs(chat)) == 3
    # the user writes again: a new silence, a new first follow-up
    env.say(chat, "我回来了")
    env.wait_settled(chat, 4)
    (again,) = env.schedules(chat)
    assert again.n == 1 and again.anchor_turn_id == env.runs(chat)[3].turn_id


def test_concurrent_sweeps_and_a_sigkill_mid_fire_send_once(env: Env) -> None:
    chat = 4003
    env.say(chat, "晚安")
    env.wait_settled(chat, 1)
    sent = len(env.fake.texts(chat))
    (row,) = env.schedules(chat)
    at = _next(row.due_at, 12)  # noon: due, outside the quiet hours
    client = redis.Redis.from_url(REDIS_URL)
    client.set("crash:proactive:fired", row.id)  # its worker dies after starting the turn
    from tasks.proactive import proactive_sweep

    proactive_sweep.apply_async(args=[at.isoformat()])
    wait_for(lambda: env.proc.poll() is not None, 60, "the SIGKILL", env.workers.logs)
    assert client.lrange("crash:log", 0, -1) == [f"proactive:{row.id}".encode()]
    env.start_worker("w1")  # the restart; the lost sweep task comes back to it
    stuck = pstore.get(env.engine, row.id)
    assert stuck is not None and stuck.state == "firing"  # its turn exists, not marked fired
    # after the lease: two sweeps on workers and one here, at once (two beats and a restart)
    later = at + timedelta(seconds=LEASE_SECONDS + 1)
    results: list[Any] = []
    results = [proactive_sweep.apply_async(args=[later.isoformat()]) for _ in range(2)]
    here = threading.Thread(target=lambda: sweep_due(env.deps, later))
    here.start()
    here.join(60)
    for result in results:
        result.get(timeout=60)
    fired = pstore.get(env.engine, row.id)
    assert fired is not None and fired.state == "fired"
    env.wait_settled(chat, 2)
    time.sleep(0.5)  # a second message would arrive now
    with Session(env.engine) as s:
        turns = s.exec(
            select(TurnRun).where(col(TurnRun.dedupe_key) == pstore.turn_key(row.id))
        ).all()
        chained = s.exec(
            select(ProactiveSchedule).where(ProactiveSchedule.anchor_turn_id == row.anchor_turn_id)
        ).all()
    assert [t.turn_id for t in turns] == [fired.turn_id]  # one turn for the schedule
    proactive = env.runs(chat)[1]
    assert len(env.fake.texts(chat)) == sent + len(proactive.rendered or [])  # sent once
    assert sorted(r.n for r in chained) == [1, 2]  # and one next follow-up
    client.close()


def test_promised_reminder_fires_once_and_not_after_cancel(env: Env) -> None:
    chat = 4004
    env.say(chat, "明天早上7点叫我起床")
    env.wait_settled(chat, 1)
    sent = len(env.fake.texts(chat))
    (wake,) = [r for r in env.schedules(chat) if r.kind == "reminder"]
    said = env.runs(chat)[0]
    assert wake.note == "起床" and wake.anchor_turn_id == said.turn_id
    assert (wake.due_at.hour, wake.due_at.minute) == (7, 0)  # 07:00 UTC, in the quiet hours
    assert env.fired(chat, env.sweep(wake.due_at - timedelta(minutes=1))) == []
    assert len(env.fired(chat, env.sweep(wake.due_at))) == 1  # on time all the same
    env.wait_settled(chat, 2)
    (reminder,) = env.reminders(chat)
    assert reminder.request["metadata"]["proactive"] == {
        "kind": "reminder",
        "schedule": wake.id,
        "n": 1,
        "note": "起床",
    }
    assert len(env.fake.texts(chat)) == sent + len(reminder.rendered or [])
    # once (the chat's follow-up waits for 08:00, the end of the quiet hours)
    assert env.fired(chat, env.sweep(wake.due_at + timedelta(minutes=30))) == []
    # another one, then the user calls it off before its time
    env.say(chat, "后天早上8点提醒我开会")
    env.wait_settled(chat, 3)
    meeting = [r for r in env.schedules(chat) if r.kind == "reminder"]
    assert [r.note for r in meeting] == ["开会"]
    env.say(chat, "算了,不用提醒我了")
    env.wait_settled(chat, 4)
    assert [r for r in env.schedules(chat) if r.kind == "reminder"] == []
    cancelled = pstore.get(env.engine, meeting[0].id)
    assert cancelled is not None and cancelled.state == "cancelled"
    env.sweep(meeting[0].due_at + timedelta(minutes=1))  # (the chat's follow-up may fire)
    assert [r.turn_id for r in env.reminders(chat)] == [reminder.turn_id]


def test_a_user_who_blocked_the_bot_gets_nothing_more(env: Env) -> None:
    chat = 4005
    env.say(chat, "拜拜")
    env.wait_settled(chat, 1)
    (row,) = env.schedules(chat)
    env.fake.fail_next(str(chat), 403, "Forbidden: bot was blocked by the user")
    assert len(env.fired(chat, env.sweep(_next(row.due_at, 12)))) == 1
    env.wait_settled(chat, 2)
    refused = env.runs(chat)[1]
    assert refused.delivery_status == "failed"
    assert "bot blocked by the user" in (refused.delivery_reason or "")
    assert env.schedules(chat) == []  # the next follow-up was cancelled, with the reason
    (chained,) = [r for r in env.schedules(chat, states=("cancelled",)) if r.n == 2]
    assert "recipient unreachable" in (chained.reason or "")
    assert env.fired(chat, env.sweep(_next(row.due_at, 12) + timedelta(days=2))) == []
