"""The reverse WebSocket gateway in process, against the loopback NapCat over real sockets, with
the real Redis stream hand-over and the outbox in SQL (SQLite and PostgreSQL): handshake
refusals, events → turns (meta events ignored, several bots), queued chunks sent once in order
and confirmed by echo, a restart that skips chunks already recorded as sent, retcodes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import redis
from sqlalchemy.engine import Engine

from nekoflow.delivery import outbox
from nekoflow.delivery.base import Chunk, Destination
from nekoflow.delivery.tables import ChunkStatus
from nekoflow.platforms.onebot.gateway import CONSUMER, GROUP
from nekoflow.platforms.onebot.sender import StreamSender, onebot_destination, stream_key
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.store import get_run
from tests.platforms.onebot.conftest import (
    BOT,
    BOT2,
    PREFIX,
    TOKEN,
    GatewayThread,
    group_at_event,
    ob_settings,
    private_event,
)
from tests.platforms.onebot.fake_onebot import FakeNapCat


def until(predicate: Callable[[], bool], timeout: float = 15.0) -> bool:
    """Poll ``predicate`` until true or ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_handshake_refuses_missing_and_wrong_tokens_and_unknown_bots(make_gateway) -> None:
    gw = make_gateway()
    cases = [
        (FakeNapCat(gw.url, BOT, None), 401),
        (FakeNapCat(gw.url, BOT, "wrong-token"), 403),
        (FakeNapCat(gw.url, "999", TOKEN), 403),
        (FakeNapCat(gw.url.replace("/onebot/v11/ws", "/other"), BOT, TOKEN), 404),
        (FakeNapCat(gw.url, BOT, TOKEN, role="Bogus"), 400),
    ]
    try:
        for fake, status in cases:
            assert until(lambda f=fake: bool(f.refused)), status
            assert fake.refused[0] == status
            assert fake.connects == 0
    finally:
        for fake, _ in cases:
            fake.close()


def test_events_become_turns_of_their_bot_and_meta_events_do_not(make_gateway, submitted) -> None:
    gw = make_gateway()
    one = FakeNapCat(gw.url, BOT, TOKEN)
    # the second bot authenticates with the query parameter, as some implementations do
    two = FakeNapCat(gw.url + f"?access_token={TOKEN}", BOT2, None, role="Event")
    try:
        assert one.wait_connected() and two.wait_connected()
        heartbeat = {
            "time": 1,
            "self_id": int(BOT),
            "post_type": "meta_event",
            "meta_event_type": "heartbeat",
            "status": {"online": True, "good": True},
            "interval": 30000,
        }
        one.send_event(heartbeat)
        one.send_event(private_event(42, "你好"))
        two.send_event(group_at_event(777, 43, "在吗", self_id=BOT2))
        one.send_event({"status": "ok", "retcode": 0, "data": None, "echo": "unknown"})
        assert until(lambda: len(submitted) == 2)
        time.sleep(0.3)
        assert sorted((e["message_type"], bot) for e, bot in submitted) == [
            ("group", BOT2),
            ("private", BOT),
        ]
    finally:
        one.close()
        two.close()


def _turn_with_chunks(
    deps, engine: Engine, redis_client: redis.Redis, texts: list[str], *, bot: str = BOT
) -> str:
    """A stored QQ turn whose chunks a deliver task handed over to ``bot``'s stream."""
    user = 4242 if bot == BOT else 4343
    handle = submit_turn(deps, "qq", private_event(user, "喵", self_id=bot), bot=bot)
    assert handle.turn_id is not None
    run = get_run(engine, handle.turn_id)
    from nekoflow.channels.context import ChatRequest

    dest = onebot_destination(ChatRequest.model_validate(run.request), run.bot)
    assert dest == Destination(platform="onebot", bot=bot, chat_type="private", chat_id=str(user))
    chunks = [
        Chunk(index=i, kind="text", payload={"type": "text", "content": t})
        for i, t in enumerate(texts)
    ]
    rows = outbox.ensure_rows(engine, handle.turn_id, dest, chunks)
    sender = StreamSender(redis_client, PREFIX, bot)
    for row in rows:
        assert outbox.claim(engine, row, outbox.utcnow())
        key = outbox.chunk_key(handle.turn_id, row.idx)
        result = sender.send(dest, Chunk(index=row.idx, payload=row.payload), key=key)
        assert result.handed_over
        outbox.mark_sent(engine, row.id, None, handed_over=True)
    return handle.turn_id


def test_queued_chunks_wait_for_the_bot_then_go_once_in_order(
    make_gateway, deps, engine: Engine, redis_client: redis.Redis
) -> None:
    turn_id = _turn_with_chunks(deps, engine, redis_client, ["第一段", "第二段", "第三段"])
    stream = stream_key(PREFIX, BOT)
    # a retried deliver task hands the same chunk over again: it is not queued twice
    dest = Destination(platform="onebot", bot=BOT, chat_type="private", chat_id="4242")
    chunk = Chunk(index=0, payload={"type": "text", "content": "第一段"})
    StreamSender(redis_client, PREFIX, BOT).send(dest, chunk, key=f"{turn_id}:0")
    assert redis_client.xlen(stream) == 3
    for entry in redis_client.xrange(stream):
        assert set(entry[1]) == {b"key", b"params"}
    gw = make_gateway()
    time.sleep(0.3)  # the bot is offline: nothing is taken
    assert all(r.status == ChunkStatus.handed_over for r in outbox.rows_for(engine, turn_id))
    fake = FakeNapCat(gw.url, BOT, TOKEN)
    try:
        assert until(lambda: redis_client.xlen(stream) == 0)
        assert fake.texts("4242") == ["第一段", "第二段", "第三段"]
        assert [a["echo"] for a in fake.actions] == [f"{turn_id}:{i}" for i in range(3)]
        assert all(a["action"] == "send_msg" for a in fake.actions)
        rows = outbox.rows_for(engine, turn_id)
        assert [r.status for r in rows] == ["sent"] * 3
        assert all(r.platform_message_id for r in rows)
        assert get_run(engine, turn_id).delivery_status == "sent"
        time.sleep(0.3)
        assert len(fake.actions) == 3
    finally:
        fake.close()


def test_restart_skips_chunks_already_recorded_as_sent(
    make_gateway, deps, engine: Engine, redis_client: redis.Redis
) -> None:
    turn_id = _turn_with_chunks(deps, engine, redis_client, ["甲", "乙"])
    stream = stream_key(PREFIX, BOT)
    # a previous gateway read both entries, got chunk 0's echo, recorded it and died before XACK
    redis_client.xgroup_create(stream, GROUP, id="0", mkstream=True)
    assert len(redis_client.xreadgroup(GROUP, CONSUMER, {stream: ">"})[0][1]) == 2
    assert outbox.confirm_sent(engine, f"{turn_id}:0", "9000")
    assert redis_client.xpending(stream, GROUP)["pending"] == 2
    gw = make_gateway()
    fake = FakeNapCat(gw.url, BOT, TOKEN)
    try:
        assert until(lambda: redis_client.xlen(stream) == 0)
        assert fake.texts() == ["乙"]  # chunk 0 is not sent twice
        assert redis_client.xpending(stream, GROUP)["pending"] == 0
        assert [r.status for r in outbox.rows_for(engine, turn_id)] == ["sent", "sent"]
    finally:
        fake.close()


def test_retcodes_fail_or_are_unconfirmed(
    make_gateway, deps, engine: Engine, redis_client: redis.Redis
) -> None:
    """An implementation-defined retcode (1200) may mean sent: recorded unknown, not resent;
    1404 is permanent."""
    turn_id = _turn_with_chunks(deps, engine, redis_client, ["也许", "好的", "被拒"])
    answers = iter([1200, 0, 1404])
    gw = make_gateway(resend_unconfirmed=False)
    fake = FakeNapCat(gw.url, BOT, TOKEN, answer=lambda action: next(answers))
    try:
        assert until(lambda: get_run(engine, turn_id).delivery_status == "failed")
        rows = outbox.rows_for(engine, turn_id)
        assert [r.status for r in rows] == ["unknown", "sent", "failed"]
        assert rows[0].error == "onebot retcode 1200; may have arrived, not re-sent"
        assert rows[2].error == "onebot retcode 1404"
        assert fake.texts() == ["也许", "好的", "被拒"]  # each sent once
        assert until(lambda: redis_client.xlen(stream_key(PREFIX, BOT)) == 0)
        reason = get_run(engine, turn_id).delivery_reason
        assert reason == "chunk 2: onebot retcode 1404"
    finally:
        fake.close()


def test_unconfirmed_retcode_is_resent_when_chosen(
    make_gateway, deps, engine: Engine, redis_client: redis.Redis
) -> None:
    """NEKOFLOW_DELIVERY_RESEND_UNCONFIRMED=true (at least once): 1200 is sent again."""
    turn_id = _turn_with_chunks(deps, engine, redis_client, ["再来"])
    answers = iter([1200, 0])
    gw = make_gateway(resend_unconfirmed=True)
    fake = FakeNapCat(gw.url, BOT, TOKEN, answer=lambda action: next(answers))
    try:
        assert until(lambda: get_run(engine, turn_id).delivery_status == "sent")
        assert [r.status for r in outbox.rows_for(engine, turn_id)] == ["sent"]
        assert fake.texts() == ["再来", "再来"]
    finally:
        fake.close()


def test_the_stream_never_carries_tokens(redis_client: redis.Redis) -> None:
    dest = Destination(platform="onebot", bot=BOT, chat_type="group", chat_id="777", reply_to="5")
    StreamSender(redis_client, PREFIX, BOT).send(
        dest, Chunk(index=0, payload={"type": "text", "content": "嗨"}), key="t1:0"
    )
    ((_, fields),) = redis_client.xrange(stream_key(PREFIX, BOT))
    params = json.loads(fields[b"params"])
    assert params == {
        "message": [
            {"type": "reply", "data": {"id": "5"}},
            {"type": "text", "data": {"text": "嗨"}},
        ],
        "message_type": "group",
        "group_id": 777,
    }
    assert TOKEN not in fields[b"params"].decode()


def test_gateway_thread_type() -> None:
    assert GatewayThread.__doc__
    assert ob_settings().bot(BOT2) is not None


def test_a_worker_killed_after_the_hand_over_queues_nothing_twice(
    make_gateway, deps, engine: Engine, redis_client: redis.Redis
) -> None:
    """The real deliver stage re-runs after a worker died between XADD and recording it."""
    from datetime import timedelta

    from sqlmodel import Session

    from nekoflow.delivery.ratelimit import NoRateLimiter
    from nekoflow.storage.turns import TurnRun
    from nekoflow.turns.delivery import DeliveryDeps, chunks_of, deliver_turn, plan_delivery

    handle = submit_turn(deps, "qq", private_event(4343, "喵喵"), bot=BOT)
    with Session(engine) as s:
        run = s.get(TurnRun, handle.turn_id)
        run.status = "done"
        run.rendered = [{"type": "text", "content": "甲"}, {"type": "text", "content": "乙"}]
        run.delivery_status = "pending"
        s.add(run)
        s.commit()
    run = get_run(engine, handle.turn_id)
    dest = plan_delivery(run)
    sender = StreamSender(redis_client, PREFIX, BOT)
    rows = outbox.ensure_rows(engine, run.turn_id, dest, chunks_of(run))
    # the killed worker: claimed chunk 0, queued it, died before recording the hand-over
    assert outbox.claim(engine, rows[0], outbox.utcnow() - timedelta(seconds=1))
    sender.send(dest, chunks_of(run)[0], key=f"{run.turn_id}:0")
    ddeps = DeliveryDeps(
        engine=engine,
        settings=deps.settings,
        limiter=NoRateLimiter(),
        senders=lambda platform, bot, settings: sender,
    )
    assert deliver_turn(ddeps, run.turn_id).kind == "done"  # the redelivered task
    stream = stream_key(PREFIX, BOT)
    assert redis_client.xlen(stream) == 2
    assert get_run(engine, run.turn_id).delivery_status == "handed_over"
    gw = make_gateway()
    fake = FakeNapCat(gw.url, BOT, TOKEN)
    try:
        assert until(lambda: get_run(engine, run.turn_id).delivery_status == "sent")
        time.sleep(0.3)
        assert fake.texts("4343") == ["甲", "乙"]
    finally:
        fake.close()


def test_each_bot_gets_only_its_own_replies(
    make_gateway, deps, engine: Engine, redis_client: redis.Redis
) -> None:
    _turn_with_chunks(deps, engine, redis_client, ["给一号"], bot=BOT)
    _turn_with_chunks(deps, engine, redis_client, ["给二号"], bot=BOT2)
    # an entry no outbox row knows (not ours, or its turn was deleted) is dropped, not sent
    dest = Destination(platform="onebot", bot=BOT, chat_type="private", chat_id="1")
    chunk = Chunk(index=0, payload={"type": "text", "content": "孤儿"})
    StreamSender(redis_client, PREFIX, BOT).send(dest, chunk, key="no-such-turn:0")
    gw = make_gateway()
    one, two = FakeNapCat(gw.url, BOT, TOKEN), FakeNapCat(gw.url, BOT2, TOKEN, role="API")
    try:
        assert until(lambda: one.texts() == ["给一号"] and two.texts() == ["给二号"])
        assert until(
            lambda: all(redis_client.xlen(stream_key(PREFIX, b)) == 0 for b in (BOT, BOT2))
        )
        time.sleep(0.3)
        assert one.texts() == ["给一号"]
    finally:
        one.close()
        two.close()


def test_an_entry_left_pending_by_a_cancelled_read_is_still_sent(
    make_gateway, deps, engine: Engine, redis_client: redis.Redis
) -> None:
    """A read of a reply loop cancelled by a reconnect leaves its entry pending: the idle loop
    finds it in the backlog."""
    gw = make_gateway()
    fake = FakeNapCat(gw.url, BOT, TOKEN)
    assert fake.wait_connected()
    stream = stream_key(PREFIX, BOT)
    assert until(lambda: redis_client.exists(stream) == 1)  # the loop created its group
    turn_id = _turn_with_chunks(deps, engine, redis_client, ["先"])
    assert until(lambda: fake.texts() == ["先"])
    # the orphan: added and read in one transaction, as the cancelled loop's read would
    handle = submit_turn(deps, "qq", private_event(4242, "再来"), bot=BOT)
    run = get_run(engine, handle.turn_id)
    from nekoflow.channels.context import ChatRequest

    dest = onebot_destination(ChatRequest.model_validate(run.request), run.bot)
    chunk = Chunk(index=0, payload={"type": "text", "content": "孤"})
    (row,) = outbox.ensure_rows(engine, handle.turn_id, dest, [chunk])
    assert outbox.claim(engine, row, outbox.utcnow())
    outbox.mark_sent(engine, row.id, None, handed_over=True)
    pipe = redis_client.pipeline(transaction=True)
    params = json.dumps({"message": [{"type": "text", "data": {"text": "孤"}}], "user_id": 4242})
    pipe.xadd(stream, {"key": f"{handle.turn_id}:0", "params": params})
    pipe.xreadgroup(GROUP, CONSUMER, {stream: ">"}, count=1)
    _, read = pipe.execute()
    assert read and len(read[0][1]) == 1
    try:
        assert until(lambda: fake.texts() == ["先", "孤"])
        assert until(lambda: redis_client.xpending(stream, GROUP)["pending"] == 0)
        assert outbox.rows_for(engine, handle.turn_id)[0].status == "sent"
        assert turn_id
    finally:
        fake.close()
