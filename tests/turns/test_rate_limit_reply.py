"""The rate-limit reply (``rate_limit_reply``) end to end against the loopback Telegram Bot API:
one reply per window through the outbox, none when unconfigured or for ``deliver=False``, a
second window's reply, and — with real workers, Redis and two enqueuer processes — still one."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from sqlmodel import Session, col, select

from nekoflow.delivery import outbox
from nekoflow.delivery.ratelimit import InMemoryRateLimiter
from nekoflow.delivery.ratelimit_redis import RedisRateLimiter
from nekoflow.delivery.settings import DeliverySettings
from nekoflow.flow.policy import FlowConfig, FlowPolicy, Rate
from nekoflow.redact import scope_label
from nekoflow.storage.turns import TurnRun
from nekoflow.turns import store
from nekoflow.turns.delivery import DeliveryDeps, deliver_turn
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline
from tests.platforms.telegram.conftest import tg_update
from tests.platforms.telegram.fake_botapi import FakeBotApi

from .conftest import REPO, wait_for

REPLY = "慢一点，我跟不上啦"
GROUP = -100777


class Clock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def published_notices(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str | None]]:
    """The notices' deliver tasks, recorded instead of sent to a broker."""
    calls: list[tuple[str, str | None]] = []
    monkeypatch.setattr(
        "nekoflow.turns.notice.publish_notice",
        lambda turn_id, scope: calls.append((turn_id, scope)),
    )
    return calls


def limit(deps, reply: str | None = REPLY, count: int = 2, period: float = 60) -> Clock:
    clock = Clock()
    deps.rate_limiter = InMemoryRateLimiter(clock=clock)
    deps.flow = FlowConfig(
        default=FlowPolicy(rate_limit_user=Rate(count=count, period=period), rate_limit_reply=reply)
    )
    return clock


def group_msg(text: str, message_id: int) -> dict:
    return tg_update(GROUP, text, chat_type="supergroup", message_id=message_id, reply_to_bot=True)


def notices(engine) -> list[TurnRun]:
    with Session(engine) as s:
        rows = s.exec(
            select(TurnRun)
            .where(TurnRun.reason == "rate_limited")
            .order_by(col(TurnRun.created_at))
        ).all()
    return list(rows)


def deliver_deps(deps) -> DeliveryDeps:
    settings = DeliverySettings(backoff_base=0.05, backoff_max=0.2, rate_limit_enabled=False)
    return DeliveryDeps(
        engine=deps.engine, settings=deps.settings, delivery=settings, limiter=InMemoryRateLimiter()
    )


def test_a_burst_gets_one_reply_per_window_through_the_outbox(
    deps, tg, bot_api: FakeBotApi, published_notices
) -> None:
    clock = limit(deps)
    handles = [
        submit_turn(deps, "telegram", group_msg(f"第{i}句", 300 + i), bot="neko") for i in range(6)
    ]
    assert [h.status() for h in handles] == ["queued"] * 2 + ["skipped"] * 4
    assert {h.reason for h in handles[2:]} == {"rate_limited"}
    (notice,) = notices(deps.engine)
    # ids only, no text; the scope as monitoring shows it (a keyed hash by default)
    scope = scope_label(notice.scope_id, key=deps.settings.scope_hash_key)
    assert published_notices == [(notice.turn_id, scope)] and scope.startswith("h:")
    assert (notice.status, notice.seq, notice.bot, notice.deliver) == (
        "skipped",
        None,
        "neko",
        True,
    )
    assert notice.delivery_status == "pending" and notice.scope_id == handles[0].run().scope_id
    assert [m["content"] for m in notice.rendered] == [REPLY]
    # Sent at once — it does not wait for the scope's earlier replies (still queued here) —
    # quoting the message that got it, exactly once.
    dd = deliver_deps(deps)
    assert deliver_turn(dd, notice.turn_id).kind == "done"
    assert deliver_turn(dd, notice.turn_id).kind == "done"
    (sent,) = bot_api.sent(GROUP)
    assert sent["text"] == REPLY
    assert sent["reply_parameters"]["message_id"] == 302
    assert [r.status for r in outbox.rows_for(deps.engine, notice.turn_id)] == ["sent"]
    assert store.get_run(deps.engine, notice.turn_id).delivery_status == "sent"
    # The scope's own turns are neither held up by the notice nor changed by it.
    assert run_inline(deps, handles[0].turn_id, sleep=False) == "ok"
    assert deliver_turn(dd, handles[0].turn_id).kind == "done"
    assert bot_api.texts(GROUP)[0] == REPLY and len(bot_api.texts(GROUP)) >= 2
    # The next window: another burst, another single reply.
    clock.now += 60
    more = [
        submit_turn(deps, "telegram", group_msg(f"又{i}句", 400 + i), bot="neko") for i in range(4)
    ]
    assert [h.status() for h in more] == ["queued"] * 2 + ["skipped"] * 2
    assert len(notices(deps.engine)) == 2 and len(published_notices) == 2


def test_no_reply_when_unconfigured(deps, tg, bot_api: FakeBotApi, published_notices) -> None:
    limit(deps, reply=None)
    handles = [
        submit_turn(deps, "telegram", group_msg(f"第{i}句", 500 + i), bot="neko") for i in range(5)
    ]
    assert [h.reason for h in handles[2:]] == ["rate_limited"] * 3
    assert notices(deps.engine) == [] and published_notices == []


def test_deliver_false_gets_no_reply_and_leaves_the_window_its_reply(
    deps, tg, bot_api: FakeBotApi, published_notices
) -> None:
    limit(deps)
    for i in range(4):  # an adapter author who sends replies itself
        submit_turn(deps, "telegram", group_msg(f"第{i}句", 600 + i), bot="neko", deliver=False)
    assert notices(deps.engine) == [] and published_notices == []
    handle = submit_turn(deps, "telegram", group_msg("再来", 700), bot="neko")
    assert handle.reason == "rate_limited"
    assert len(notices(deps.engine)) == 1 and len(published_notices) == 1


def test_a_lost_publish_is_left_to_the_sweeper(
    deps, tg, bot_api: FakeBotApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broker_down(turn_id: str, scope: str | None) -> None:
        raise ConnectionError("broker down")

    monkeypatch.setattr("nekoflow.turns.notice.publish_notice", broker_down)
    limit(deps, count=1)
    submit_turn(deps, "telegram", group_msg("一", 800), bot="neko")
    assert submit_turn(deps, "telegram", group_msg("二", 801), bot="neko").reason == "rate_limited"
    (notice,) = notices(deps.engine)
    stalled = outbox.stalled_deliveries(deps.engine, older_than=timedelta(seconds=-1))
    assert notice.turn_id in [r.turn_id for r in stalled]  # republish_deliveries sends it


def test_a_channel_without_a_sender_stores_no_notice(deps, published_notices) -> None:
    limit(deps, count=1)
    ev = {"session_id": "w1", "message": "你好", "user_id": "u1", "display_name": "莱姆"}
    submit_turn(deps, "web", ev)
    assert submit_turn(deps, "web", ev | {"message": "再问"}).reason == "rate_limited"
    assert notices(deps.engine) == [] and published_notices == []


# --- real workers, Redis, two enqueuer processes --------------------------------------------


def _reply_count(fake: FakeBotApi) -> int:
    return fake.texts(GROUP).count(REPLY)


def _settled(engine, fake: FakeBotApi, turns: int, replies: int) -> bool:
    with Session(engine) as s:
        runs = s.exec(select(TurnRun).where(TurnRun.channel == "telegram")).all()
    answered = [r for r in runs if r.reason != "rate_limited"]
    return (
        len(answered) == turns
        and all(r.delivery_status in ("sent", "failed") for r in runs)
        and _reply_count(fake) >= replies
    )


@pytest.mark.slow
def test_real_workers_one_reply_per_window(live, workers, tg, bot_api: FakeBotApi) -> None:
    live.flow = FlowConfig(
        default=FlowPolicy(rate_limit_user=Rate(count=3, period=4), rate_limit_reply=REPLY)
    )
    assert isinstance(live.rate_limiter, RedisRateLimiter)  # shared by every enqueuer
    workers.start(extra_env=tg)
    from tasks import enqueue_turn

    first = [enqueue_turn("telegram", group_msg(f"甲{i}", 1000 + i), bot="neko") for i in range(8)]
    assert sum(h.reason == "rate_limited" for h in first) == 5
    wait_for(lambda: _settled(live.engine, bot_api, 3, 1), 90, "burst 1", workers.logs)
    time.sleep(4.2)  # the window has passed
    second = [enqueue_turn("telegram", group_msg(f"乙{i}", 2000 + i), bot="neko") for i in range(6)]
    assert sum(h.reason == "rate_limited" for h in second) == 3
    wait_for(lambda: _settled(live.engine, bot_api, 6, 2), 90, "burst 2", workers.logs)
    time.sleep(0.5)  # a duplicate would arrive now
    assert _reply_count(bot_api) == 2
    assert len(notices(live.engine)) == 2


_CHILD = """
import json, sys, time
from tasks import enqueue_turn
from tasks.runtime import get_deps
get_deps()
updates, start_at = json.loads(sys.argv[1]), float(sys.argv[2])
while time.time() < start_at:
    time.sleep(0.001)
for update in updates:
    enqueue_turn('telegram', update, bot='neko')
"""


@pytest.mark.slow
def test_two_enqueuer_processes_racing_send_one_reply(
    live, workers, worker_env, tg, bot_api: FakeBotApi, tmp_path
) -> None:
    config = tmp_path / "config.ini"
    config.write_text(
        f"[conversation_flow]\nrate_limit_user = 4/120\nrate_limit_reply = {REPLY}\n",
        encoding="utf-8",
    )
    env = {**worker_env, **tg, "NEKOFLOW_RUNTIME_CONFIG_PATH": str(config)}
    start_at = time.time() + 8
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _CHILD,
                json.dumps([group_msg(f"{p}{i}", 3000 + 100 * n + i) for i in range(10)]),
                str(start_at),
            ],
            cwd=REPO,
            env=env,
        )
        for n, p in enumerate(("进程A", "进程B"))
    ]
    for child in children:
        assert child.wait(timeout=120) == 0
    workers.start(extra_env=tg)
    wait_for(lambda: _settled(live.engine, bot_api, 4, 1), 120, "the replies", workers.logs)
    time.sleep(0.5)
    assert _reply_count(bot_api) == 1, bot_api.texts(GROUP)
    assert len(notices(live.engine)) == 1
