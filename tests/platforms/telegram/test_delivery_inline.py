"""The deliver stage against the loopback Bot API, in this process (real SQL, real HTTP):
exactly once, reply target and forum topic, 429 retry_after, 403/400 permanent, a group
upgraded to a supergroup (resent to the new id), 5xx backoff,
a send left in flight by a dead worker, an answer after the read timeout (not re-sent unless
chosen), a refused connection (retried), deliver=False, order per conversation, typing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import Session, select

from nekoflow.delivery import outbox
from nekoflow.delivery.base import Chunk, Destination
from nekoflow.delivery.ratelimit import InMemoryRateLimiter
from nekoflow.delivery.settings import DeliverySettings
from nekoflow.delivery.tables import OutboxRow
from nekoflow.platforms.telegram.client import BotApiClient
from nekoflow.platforms.telegram.sender import TelegramSender
from nekoflow.storage.dialogue import utcnow
from nekoflow.turns import store
from nekoflow.turns.delivery import (
    DeliveryDeps,
    chunks_of,
    deliver_turn,
    next_in_line,
    plan_delivery,
    send_typing,
)
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline
from tests.platforms.telegram.conftest import TOKEN, reset_caches, tg_update
from tests.platforms.telegram.fake_botapi import FakeBotApi


def _deliver_deps(deps, **overrides) -> DeliveryDeps:
    """Rate limits off unless asked for (they have their own tests)."""
    overrides.setdefault("rate_limit_enabled", False)
    settings = DeliverySettings(backoff_base=0.05, backoff_max=0.2, **overrides)
    return DeliveryDeps(
        engine=deps.engine, settings=deps.settings, delivery=settings, limiter=InMemoryRateLimiter()
    )


def _turn(deps, update, **kw) -> str:
    handle = submit_turn(deps, "telegram", update, bot="neko", **kw)
    assert not handle.is_skipped, handle.reason
    assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
    return handle.turn_id


def _later(dd: DeliveryDeps, seconds: float) -> None:
    """Move the deliver stage's clock on by ``seconds`` (past a chunk's stored retry time)."""
    before = dd.now
    dd.now = lambda: before() + timedelta(seconds=seconds)


def _rows(engine, turn_id: str) -> list[OutboxRow]:
    return outbox.rows_for(engine, turn_id)


def test_private_reply_is_delivered_exactly_once(deps, tg_env, fake_tg: FakeBotApi) -> None:
    turn_id = _turn(deps, tg_update(4242, "你好呀"))
    run = store.get_run(deps.engine, turn_id)
    assert run.bot == "neko" and run.delivery_status == "pending"
    dd = _deliver_deps(deps)
    assert deliver_turn(dd, turn_id).kind == "done"
    assert deliver_turn(dd, turn_id).kind == "done"  # a redelivered task sends nothing
    sent = fake_tg.sent(4242)
    assert [p["text"] for p in sent] == [m["content"] for m in run.rendered]
    assert "reply_parameters" not in sent[0] and "message_thread_id" not in sent[0]
    rows = _rows(deps.engine, turn_id)
    assert [(r.status, r.attempts) for r in rows] == [("sent", 1)] * len(rows)
    assert rows[0].platform_message_id and rows[0].platform_message_id.isdigit()
    run = store.get_run(deps.engine, turn_id)
    assert run.delivery_status == "sent" and run.delivery_reason is None


def test_forum_topic_reply_quotes_the_message(deps, tg_env, fake_tg: FakeBotApi) -> None:
    update = tg_update(
        -100123, "你好", chat_type="supergroup", message_id=77, thread_id=5, reply_to_bot=True
    )
    turn_id = _turn(deps, update)
    assert deliver_turn(_deliver_deps(deps), turn_id).kind == "done"
    first = fake_tg.sent(-100123)[0]
    assert first["chat_id"] == -100123
    assert first["message_thread_id"] == 5
    assert first["reply_parameters"] == {"message_id": 77, "allow_sending_without_reply": True}


def test_429_retry_after_is_honoured(deps, tg_env, fake_tg: FakeBotApi) -> None:
    turn_id = _turn(deps, tg_update(5001, "在吗"))
    fake_tg.fail_next("5001", 429, "Too Many Requests: retry after 3", retry_after=3)
    dd = _deliver_deps(deps)
    first = deliver_turn(dd, turn_id)
    assert (first.kind, first.delay) == ("retry", 3.0)
    assert "429" in first.reason and "Too Many" not in first.reason
    row = _rows(deps.engine, turn_id)[0]
    assert (row.status, row.attempts) == ("pending", 1)
    early = deliver_turn(dd, turn_id)  # another run inside retry_after waits, sends nothing
    assert early.kind == "retry" and 0 < early.delay <= 3.0 and fake_tg.sent(5001) == []
    _later(dd, 3)
    assert deliver_turn(dd, turn_id).kind == "done"
    assert len(fake_tg.sent(5001)) == len(store.get_run(deps.engine, turn_id).rendered)
    assert _rows(deps.engine, turn_id)[0].attempts == 2


@pytest.mark.parametrize(
    ("setup", "words"),
    [("blocked", "bot blocked by the user"), ("missing", "chat not found")],
)
def test_permanent_errors_end_delivery_not_the_turn(
    deps, tg_env, fake_tg: FakeBotApi, setup: str, words: str
) -> None:
    getattr(fake_tg.state, setup).add("6001")
    turn_id = _turn(deps, tg_update(6001, "你好"))
    outcome = deliver_turn(_deliver_deps(deps), turn_id)
    assert outcome.kind == "failed"
    run = store.get_run(deps.engine, turn_id)
    assert run.status == "done"
    assert run.delivery_status == "failed"
    assert words in run.delivery_reason
    assert "Forbidden" not in run.delivery_reason and "Bad Request" not in run.delivery_reason
    assert fake_tg.sent(6001) == []
    assert deliver_turn(_deliver_deps(deps), turn_id).kind == "done"  # settled: nothing more
    assert len(fake_tg.calls("sendMessage")) == 1


def test_group_upgraded_to_a_supergroup_gets_the_reply_at_its_new_id(
    deps, tg_env, fake_tg: FakeBotApi
) -> None:
    turn_id = _turn(deps, tg_update(-6101, "你好", chat_type="group", reply_to_bot=True))
    fake_tg.migrate(-6101, -1006101)
    assert deliver_turn(_deliver_deps(deps), turn_id).kind == "done"
    rendered = store.get_run(deps.engine, turn_id).rendered
    assert fake_tg.sent(-6101) == []
    assert fake_tg.texts(-1006101) == [m["content"] for m in rendered]
    # only the first chunk met the old id; the rest went straight to the supergroup
    to_old = [c for c in fake_tg.calls("sendMessage") if c.params["chat_id"] == -6101]
    assert len(to_old) == 1
    rows = _rows(deps.engine, turn_id)
    assert [r.status for r in rows] == ["sent"] * len(rendered)
    assert store.get_run(deps.engine, turn_id).delivery_status == "sent"


def test_later_chunks_of_a_migrated_group_go_straight_to_the_supergroup(
    fake_tg: FakeBotApi,
) -> None:
    fake_tg.migrate(-6301, -1006301)
    sender = TelegramSender(BotApiClient(TOKEN, base_url=fake_tg.url))
    dest = Destination(platform="telegram", chat_type="group", chat_id="-6301", reply_to="5")
    for i in range(3):
        chunk = Chunk(index=i, payload={"type": "text", "content": f"第{i}句"})
        assert sender.send(dest, chunk, key=f"t:{i}").platform_message_id
    sender.typing(dest)
    assert fake_tg.texts(-1006301) == ["第0句", "第1句", "第2句"]
    assert [c.params["chat_id"] for c in fake_tg.calls("sendMessage")] == [-6301] + [-1006301] * 3
    assert fake_tg.calls("sendChatAction")[0].params["chat_id"] == -1006301


def test_migrate_answer_from_the_new_id_is_not_followed_again(
    deps, tg_env, fake_tg: FakeBotApi
) -> None:
    turn_id = _turn(deps, tg_update(-6201, "你好", chat_type="group", reply_to_bot=True))
    fake_tg.migrate(-6201, -1006201)
    fake_tg.migrate(-1006201, -1006202)  # a broken chain: resend once, then fail for good
    assert deliver_turn(_deliver_deps(deps), turn_id).kind == "failed"
    reason = store.get_run(deps.engine, turn_id).delivery_reason
    assert "group migrated to a supergroup" in reason
    assert "6201" not in reason and "upgraded" not in reason
    assert len(fake_tg.calls("sendMessage")) == 2
    assert fake_tg.sent(-1006202) == []


def test_server_errors_back_off_then_give_up(deps, tg_env, fake_tg: FakeBotApi) -> None:
    turn_id = _turn(deps, tg_update(7001, "你好"))
    for _ in range(3):
        fake_tg.fail_next("7001", 502, "Bad Gateway")
    dd = _deliver_deps(deps, max_attempts=3)
    for _ in range(2):
        outcome = deliver_turn(dd, turn_id)
        assert outcome.kind == "retry" and 0 < outcome.delay <= 0.2
        _later(dd, outcome.delay)
    outcome = deliver_turn(dd, turn_id)
    assert outcome.kind == "failed"
    run = store.get_run(deps.engine, turn_id)
    assert run.delivery_status == "failed" and "gave up after 3 attempt(s)" in run.delivery_reason


def test_send_left_in_flight_by_a_dead_worker(deps, tg_env, fake_tg: FakeBotApi) -> None:
    """At most once by default (Telegram cannot deduplicate); at least once when chosen."""
    for resend, chat in ((False, 8001), (True, 8002)):
        turn_id = _turn(deps, tg_update(chat, "你好"))
        dd = _deliver_deps(deps, resend_unconfirmed=resend)
        run = store.get_run(deps.engine, turn_id)
        row = outbox.ensure_rows(deps.engine, turn_id, plan_delivery(run), chunks_of(run))[0]
        # a worker claimed the chunk and died during the call: its lease runs out
        assert outbox.claim(deps.engine, row, utcnow() + timedelta(seconds=30))
        held = deliver_turn(dd, turn_id)
        assert held.kind == "retry" and held.delay > 0  # lease still live: wait
        with Session(deps.engine) as s:
            r = s.get(OutboxRow, row.id)
            r.lease_until = utcnow() - timedelta(seconds=1)
            s.add(r)
            s.commit()
        assert deliver_turn(dd, turn_id).kind == "done"
        statuses = [r.status for r in _rows(deps.engine, turn_id)]
        assert statuses[0] == ("sent" if resend else "unknown")
        run = store.get_run(deps.engine, turn_id)
        assert run.delivery_status == "sent"
        if not resend:
            assert "unconfirmed" in run.delivery_reason
        expected = len(run.rendered) - (0 if resend else 1)
        assert len(fake_tg.sent(chat)) == expected


@pytest.mark.parametrize("resend", [False, True])
def test_answer_after_the_read_timeout_is_not_sent_again(
    deps, tg_env, fake_tg: FakeBotApi, monkeypatch: pytest.MonkeyPatch, resend: bool
) -> None:
    """The platform took chunk 0 but answered after our read timeout: at most once by default
    (recorded unknown, the next chunks still go), at least once when chosen."""
    monkeypatch.setenv("NEKOFLOW_TELEGRAM_TIMEOUT", "0.3")
    reset_caches()
    chat = 8101
    turn_id = _turn(deps, tg_update(chat, "你好"))
    rendered = store.get_run(deps.engine, turn_id).rendered
    fake_tg.answer_late(str(chat), 1.0)
    dd = _deliver_deps(deps, resend_unconfirmed=resend)
    outcome = deliver_turn(dd, turn_id)
    first = _rows(deps.engine, turn_id)[0]
    assert first.attempts == 1 and "ReadTimeout" in (first.error or "")
    assert "你好" not in (first.error or "") and "/bot" not in (first.error or "")
    if resend:
        assert outcome.kind == "retry" and first.status == "pending"
        _later(dd, outcome.delay)
        assert deliver_turn(dd, turn_id).kind == "done"
        assert len(fake_tg.sent(chat)) == len(rendered) + 1  # chunk 0 went out twice
        return
    assert outcome.kind == "done" and first.status == "unknown"
    assert [r.status for r in _rows(deps.engine, turn_id)[1:]] == ["sent"] * (len(rendered) - 1)
    run = store.get_run(deps.engine, turn_id)
    assert run.delivery_status == "sent" and "1 chunk(s) unconfirmed: [0]" in run.delivery_reason
    assert deliver_turn(dd, turn_id).kind == "done"  # settled: nothing more
    assert [p["text"] for p in fake_tg.sent(chat)] == [m["content"] for m in rendered]


def test_refused_connection_is_retried(
    deps, tg_env, fake_tg: FakeBotApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing reached the platform (connection refused): the chunk is simply tried again."""
    turn_id = _turn(deps, tg_update(8201, "你好"))
    rendered = store.get_run(deps.engine, turn_id).rendered
    monkeypatch.setenv("NEKOFLOW_TELEGRAM_API_BASE_URL", "http://127.0.0.1:9")
    reset_caches()
    dd = _deliver_deps(deps)
    outcome = deliver_turn(dd, turn_id)
    assert outcome.kind == "retry" and "ConnectError" in outcome.reason
    row = _rows(deps.engine, turn_id)[0]
    assert (row.status, row.attempts) == ("pending", 1)
    monkeypatch.setenv("NEKOFLOW_TELEGRAM_API_BASE_URL", fake_tg.url)
    reset_caches()
    _later(dd, outcome.delay)
    assert deliver_turn(dd, turn_id).kind == "done"
    assert [p["text"] for p in fake_tg.sent(8201)] == [m["content"] for m in rendered]


def test_no_delivery_without_a_destination(deps, tg_env, fake_tg: FakeBotApi) -> None:
    handle = submit_turn(deps, "telegram", tg_update(9001, "你好"), deliver=False)
    assert store.get_run(deps.engine, handle.turn_id).delivery_status is None
    web = submit_turn(deps, "web", {"session_id": "w1", "message": "你好", "user_id": "u"})
    assert store.get_run(deps.engine, web.turn_id).delivery_status is None
    for h in (handle, web):
        run_inline(deps, h.turn_id, sleep=False)
        assert deliver_turn(_deliver_deps(deps), h.turn_id).kind == "done"
    with Session(deps.engine) as s:
        assert s.exec(select(OutboxRow)).all() == []
    assert fake_tg.calls("sendMessage") == []


def test_unconfigured_platform_gets_no_outbox(deps, fake_tg: FakeBotApi, monkeypatch) -> None:
    monkeypatch.delenv("NEKOFLOW_TELEGRAM_TOKEN", raising=False)
    reset_caches()
    handle = submit_turn(deps, "telegram", tg_update(9101, "你好"))
    assert store.get_run(deps.engine, handle.turn_id).delivery_status is None


def test_replies_to_one_chat_go_out_in_turn_order(deps, tg_env, fake_tg: FakeBotApi) -> None:
    first = _turn(deps, tg_update(9201, "第一句"))
    second = _turn(deps, tg_update(9201, "第二句"))
    dd = _deliver_deps(deps)
    waiting = deliver_turn(dd, second)
    assert waiting.kind == "waiting" and first in waiting.reason
    assert fake_tg.sent(9201) == []
    assert next_in_line(dd, second) is None  # still open: hands nothing on
    assert deliver_turn(dd, first).kind == "done"
    assert next_in_line(dd, first) == second  # the first reply's end starts the second
    assert deliver_turn(dd, second).kind == "done"
    assert next_in_line(dd, second) is None
    r1, r2 = (store.get_run(deps.engine, t).rendered for t in (first, second))
    assert fake_tg.texts(9201) == [m["content"] for m in r1 + r2]


def test_typing_indicator(deps, tg_env, fake_tg: FakeBotApi) -> None:
    handle = submit_turn(deps, "telegram", tg_update(9301, "你好", thread_id=None), bot="neko")
    assert send_typing(_deliver_deps(deps), handle.turn_id) is True
    (call,) = fake_tg.calls("sendChatAction")
    assert call.params == {"chat_id": 9301, "action": "typing"}
    fake_tg.state.tokens.clear()  # the Bot API now refuses: typing is best effort
    assert send_typing(_deliver_deps(deps), handle.turn_id) is False


def test_rate_limit_delays_and_never_drops(deps, tg_env, fake_tg: FakeBotApi) -> None:
    first = _turn(deps, tg_update(9401, "第一句"))
    second = _turn(deps, tg_update(9401, "第二句"))
    dd = _deliver_deps(deps, rate_limit_enabled=True)
    assert deliver_turn(dd, first).kind == "done"
    delayed = deliver_turn(dd, second)  # 1 message/s per chat: the second waits
    assert delayed.kind == "retry" and delayed.reason == "rate limited"
    assert 0 < delayed.delay <= 1.0
    assert [r.status for r in _rows(deps.engine, second)] == ["pending"]
    dd.limiter = InMemoryRateLimiter(clock=lambda: 10**9)  # time has passed
    assert deliver_turn(dd, second).kind == "done"
    assert len(fake_tg.sent(9401)) == 2


def test_superseded_turn_sends_nothing_and_blocks_nothing(
    deps, tg_env, fake_tg: FakeBotApi
) -> None:
    """``on_busy = interrupt`` ends a turn as superseded: it has nothing to deliver and the
    reply of the turn that took over does not wait for it."""
    from sqlalchemy import update

    from nekoflow.storage.turns import TurnRun

    old = submit_turn(deps, "telegram", tg_update(9501, "第一句"), bot="neko")
    with Session(deps.engine) as s:
        s.exec(
            update(TurnRun)
            .where(TurnRun.turn_id == old.turn_id)
            .values(status="superseded", reason="superseded")
        )
        s.commit()
    new = _turn(deps, tg_update(9501, "第二句"))
    dd = _deliver_deps(deps)
    assert deliver_turn(dd, new).kind == "done"  # not held behind the superseded turn
    assert deliver_turn(dd, old.turn_id).reason == "turn superseded"
    run = store.get_run(deps.engine, old.turn_id)
    assert (run.delivery_status, run.delivery_reason) == ("not_sent", "superseded")
    assert fake_tg.texts(9501) == [m["content"] for m in store.get_run(deps.engine, new).rendered]
