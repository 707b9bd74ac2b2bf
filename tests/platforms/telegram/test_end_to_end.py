"""Telegram end to end with real Celery workers, real Redis and the test database, against the
loopback Bot API: webhook and polling in, the reply out exactly once (also with workers
SIGKILLed around and during ``deliver``), 429 retry_after, 403, a 50-message burst under the
rate limit, and a polling restart that neither skips nor repeats."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import redis
from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from nekoflow.api import create_app
from nekoflow.delivery import outbox
from nekoflow.delivery.tables import OutboxRow
from nekoflow.platforms.telegram.gateway import PollingGateway, load_offset
from nekoflow.platforms.telegram.settings import get_telegram_settings
from nekoflow.storage.turns import TurnRun
from nekoflow.turns import store
from tasks import enqueue_turn
from tests.conftest import production_db_only
from tests.platforms.telegram.conftest import SECRET, tg_update
from tests.platforms.telegram.fake_botapi import FakeBotApi
from tests.turns.conftest import wait_for

HOOK = "/webhooks/telegram/neko"


def _runs(engine, chat_id: int) -> list[TurnRun]:
    """The turns of one Telegram chat, in order."""
    with Session(engine) as s:
        runs = s.exec(
            select(TurnRun).where(TurnRun.channel == "telegram").order_by(col(TurnRun.created_at))
        ).all()
    chat = str(chat_id)
    mine = [r for r in runs if r.request.get("conversation_id") == chat]
    return sorted(mine, key=lambda r: (r.scope_id or "", r.seq or 0))


def _state(engine, fake: FakeBotApi, chat_id: int) -> str:
    """What the turns of a chat and the fake look like (for failure messages)."""
    runs = [
        (r.turn_id, r.status, r.stage, r.delivery_status, r.publishes)
        for r in _runs(engine, chat_id)
    ]
    return f"\nruns: {runs}\nfake calls: {[(c.method, c.params) for c in fake.calls()]}"


def _expected_texts(engine, chat_id: int) -> list[str]:
    return [m["content"] for r in _runs(engine, chat_id) for m in (r.rendered or [])]


def _delivered(engine, fake: FakeBotApi, chat_id: int, turns: int) -> bool:
    runs = _runs(engine, chat_id)
    return (
        len(runs) == turns
        and all(r.delivery_status in ("sent", "failed") for r in runs)
        and len(fake.sent(chat_id)) >= len(_expected_texts(engine, chat_id))
    )


def test_webhook_update_is_answered_exactly_once(
    live, workers, worker_env, tg_env, fake_tg: FakeBotApi
) -> None:
    workers.start(extra_env=tg_env)
    app = create_app(live.settings, engine=live.engine, turn_deps=live)
    update = tg_update(31337, "你好呀,钦灵")
    with TestClient(app) as client:
        assert client.post(HOOK, json=update).status_code == 401
        wrong = {"X-Telegram-Bot-Api-Secret-Token": "nope"}
        assert client.post(HOOK, json=update, headers=wrong).status_code == 401
        good = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
        unknown = client.post("/webhooks/telegram/other", json=update, headers=good)
        assert unknown.status_code == 401
        bad = client.post(HOOK, json={"update_id": 1, "message": {"chat": {}}}, headers=good)
        assert bad.status_code == 422 and "message" in str(bad.json())
        first = client.post(HOOK, json=update, headers=good)
        assert first.status_code == 200 and first.json()["status"] == "accepted"
        again = client.post(HOOK, json=update, headers=good)  # Telegram re-sends the update
        assert again.json()["turn_id"] == first.json()["turn_id"]
    wait_for(
        lambda: _delivered(live.engine, fake_tg, 31337, 1),
        60,
        "the reply",
        lambda: workers.logs() + _state(live.engine, fake_tg, 31337),
    )
    time.sleep(0.5)  # a duplicate would arrive now
    assert fake_tg.texts(31337) == _expected_texts(live.engine, 31337)
    # The typing indicator is skipped once the turn has finished (a scripted turn can finish
    # before the typing task runs), so it is checked in test_delivery_inline, not here.
    (run,) = _runs(live.engine, 31337)
    assert (run.status, run.delivery_status, run.bot) == ("done", "sent", "neko")


def test_handle_wait_is_woken_by_the_notification(
    live, workers, tg_env, fake_tg: FakeBotApi
) -> None:
    workers.start(extra_env=tg_env)
    handle = enqueue_turn("telegram", tg_update(4100, "你好"), bot="neko", deliver=False)
    assert handle._notifier is not None
    reply = handle.wait(timeout=60)
    assert reply and reply[0]["type"] == "text"
    second = enqueue_turn("telegram", tg_update(4100, "再见"), bot="neko", deliver=False)
    assert asyncio.run(second.wait_async(timeout=60))[0]["type"] == "text"
    time.sleep(0.5)
    assert fake_tg.calls("sendMessage") == []  # deliver=False: the caller sends replies
    assert store.get_run(live.engine, handle.turn_id).delivery_status is None


def test_polling_gateway_restart_neither_skips_nor_repeats(
    live, workers, tg_env, fake_tg: FakeBotApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEKOFLOW_TELEGRAM_MODE", "polling")
    get_telegram_settings.cache_clear()
    settings = get_telegram_settings()
    bot = settings.bot("neko")
    workers.start(extra_env=tg_env | {"NEKOFLOW_TELEGRAM_MODE": "polling"})
    submitted: list[int] = []

    def submit(update: dict, name: str) -> object:
        submitted.append(update["update_id"])
        return enqueue_turn("telegram", update, bot=name)

    for i in range(3):
        fake_tg.push_update(tg_update(5100, f"第{i}句", update_id=900 + i))
    gateway = PollingGateway(live.engine, settings, bot, submit)
    gateway.prepare()
    assert gateway.poll_once(timeout=0) == 3
    assert load_offset(live.engine, "neko") == 903

    # a crash after storing update 903 as a turn but before saving the offset
    def crash_after_submit(update: dict, name: str) -> object:
        submit(update, name)
        raise RuntimeError("killed")

    fake_tg.push_update(tg_update(5100, "第3句", update_id=903))
    with pytest.raises(RuntimeError):
        PollingGateway(live.engine, settings, bot, crash_after_submit).poll_once(timeout=0)
    assert load_offset(live.engine, "neko") == 903
    fake_tg.push_update(tg_update(5100, "第4句", update_id=904))
    restarted = PollingGateway(live.engine, settings, bot, submit)  # a new process: offset from SQL
    assert restarted.poll_once(timeout=0) == 2
    assert load_offset(live.engine, "neko") == 905
    assert restarted.poll_once(timeout=0) == 0  # confirmed: nothing comes back
    assert submitted == [900, 901, 902, 903, 903, 904]  # 903 fetched again after the crash...
    wait_for(lambda: _delivered(live.engine, fake_tg, 5100, 5), 90, "5 replies", workers.logs)
    assert len(_runs(live.engine, 5100)) == 5  # ...but only one turn each
    time.sleep(0.5)
    assert fake_tg.texts(5100) == _expected_texts(live.engine, 5100)
    assert [o for o in fake_tg.state.offsets if o is not None][-1] == 905


def test_polling_gateway_thread_stops_cleanly(live, tg_env, fake_tg: FakeBotApi, monkeypatch):
    monkeypatch.setenv("NEKOFLOW_TELEGRAM_MODE", "polling")
    get_telegram_settings.cache_clear()
    settings = get_telegram_settings()
    got: list[int] = []
    gateway = PollingGateway(
        live.engine, settings, settings.bot("neko"), lambda u, n: got.append(u["update_id"])
    )
    stop = threading.Event()
    thread = threading.Thread(target=gateway.run, args=(stop,), daemon=True)
    thread.start()
    fake_tg.push_update(tg_update(5200, "你好", update_id=1))
    deadline = time.monotonic() + 20
    while not got and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    thread.join(timeout=10)
    assert got == [1] and not thread.is_alive()
    assert fake_tg.calls("deleteWebhook")


def test_429_and_403_through_workers(live, workers, tg_env, fake_tg: FakeBotApi) -> None:
    workers.start(extra_env=tg_env)
    fake_tg.fail_next("6100", 429, "Too Many Requests: retry after 1", retry_after=1)
    fake_tg.state.blocked.add("6200")
    enqueue_turn("telegram", tg_update(6100, "你好"), bot="neko")
    enqueue_turn("telegram", tg_update(6200, "你好"), bot="neko")
    wait_for(lambda: _delivered(live.engine, fake_tg, 6100, 1), 60, "429 retried", workers.logs)
    wait_for(
        lambda: [r.delivery_status for r in _runs(live.engine, 6200)] == ["failed"],
        60,
        "403 settled",
        workers.logs,
    )
    (ok,) = _runs(live.engine, 6100)
    assert ok.delivery_status == "sent"
    assert fake_tg.texts(6100) == _expected_texts(live.engine, 6100)
    assert outbox.rows_for(live.engine, ok.turn_id)[0].attempts == 2
    (blocked,) = _runs(live.engine, 6200)
    assert (blocked.status, blocked.delivery_status) == ("done", "failed")
    assert "bot blocked by the user" in blocked.delivery_reason
    assert fake_tg.sent(6200) == []


@pytest.mark.slow
def test_sigkill_around_and_during_deliver_sends_each_chunk_once(
    live, workers, tg_env, fake_tg: FakeBotApi, redis_client: redis.Redis
) -> None:
    crash_env = tg_env | {
        "NEKOFLOW_BROKER_VISIBILITY_TIMEOUT": "2",
        "NEKOFLOW_TURN_LEASE_SECONDS": "4",
        "NEKOFLOW_LLM_TIMEOUT": "3",
        "NEKOFLOW_SWEEP_INTERVAL_SECONDS": "1",
        "NEKOFLOW_DELIVERY_LEASE_SECONDS": "2",
    }
    redis_client.set("crash:before:deliver", 1)
    redis_client.set("crash:after:deliver", 1)
    arrived = fake_tg.hold("7300")  # the send to chat 7300 reaches Telegram; the worker dies

    def start(n: int):
        return workers.start(
            app="tests.turns.crash_app",
            concurrency=1,
            beat=True,
            extra_env=crash_env,
            name=f"crash{n}",
        )

    proc = start(0)
    chats = [7100, 7200, 7300]
    for chat in chats:
        enqueue_turn("telegram", tg_update(chat, "谢谢你"), bot="neko")
    restarts, killed_mid_call = 0, False
    deadline = time.monotonic() + 180
    while not all(_delivered(live.engine, fake_tg, c, 1) for c in chats):
        assert time.monotonic() < deadline, workers.logs()
        if not killed_mid_call and arrived.is_set():
            workers.kill(proc)
            killed_mid_call = True
            fake_tg.release("7300")
        if proc.poll() is not None:
            restarts += 1
            proc = start(restarts)
        time.sleep(0.1)
    crashed = sorted(c.decode() for c in redis_client.lrange("crash:log", 0, -1))
    assert crashed == ["after:deliver", "before:deliver"]
    assert killed_mid_call and restarts >= 3
    time.sleep(1.0)
    for chat in chats:  # every reply arrived, none twice
        assert fake_tg.texts(chat) == _expected_texts(live.engine, chat), chat
    (mid,) = _runs(live.engine, 7300)
    rows = outbox.rows_for(live.engine, mid.turn_id)
    assert rows[0].status == "unknown"  # in flight when the worker died: never sent again
    with Session(live.engine) as s:
        assert all(r.status in ("sent", "unknown") for r in s.exec(select(OutboxRow)).all())


@pytest.mark.slow
@production_db_only
def test_burst_of_thirty_to_one_chat_is_delayed_not_dropped(
    live, workers, tg_env, fake_tg: FakeBotApi
) -> None:
    limits = '{"telegram": {"chat": {"count": 10, "period": 1}}}'
    fake_tg.state.flood_limit = 14  # the fake answers 429 above this many per second
    workers.start(queues="turns,llm", extra_env=tg_env, name="turns")
    handles = [enqueue_turn("telegram", tg_update(8800, f"第{i}句"), bot="neko") for i in range(30)]
    wait_for(lambda: all(h.status() == "done" for h in handles), 240, "30 turns", workers.logs)
    assert fake_tg.calls("sendMessage") == []  # nobody consumes outbound yet: a real burst
    workers.start(
        queues="outbound",
        concurrency=4,
        extra_env=tg_env | {"NEKOFLOW_DELIVERY_RATE_LIMITS": limits},
        name="outbound",
    )
    wait_for(lambda: _delivered(live.engine, fake_tg, 8800, 30), 240, "30 replies", workers.logs)
    time.sleep(0.5)
    assert fake_tg.texts(8800) == _expected_texts(live.engine, 8800)  # all, once, in order
    assert len(fake_tg.texts(8800)) >= 30
    assert fake_tg.state.flood_answers == 0  # the limiter kept under Telegram's limit
    assert all(r.delivery_status == "sent" for r in _runs(live.engine, 8800))
