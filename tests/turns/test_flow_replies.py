"""The optional short replies to skipped messages — ``busy_reply``, ``stale_reply``,
``quota_reply`` — with real workers, real Redis and the loopback Telegram Bot API: once per scope
per window, delivered like any reply, and silence when unset."""

from __future__ import annotations

import pytest

from nekoflow.flow.policy import OnBusy
from tests.platforms.telegram.fake_botapi import FakeBotApi

from .conftest import wait_for
from .test_flow_races import CHAT, GROUP, configure, delivered, group_msg, private_msg, runs

pytestmark = pytest.mark.slow

BUSY = "稍等，我还在回上一条"
STALE = "刚才没看到，现在在啦"
QUOTA = "今天聊得太多啦，明天见"


def test_busy_reply_once_per_window_per_scope(
    live, workers, tg, bot_api: FakeBotApi, tmp_path
) -> None:
    from tasks import enqueue_turn

    env = configure(
        live,
        tmp_path,
        f"on_busy = reject\nbusy_reply = {BUSY}\n",
        on_busy=OnBusy.reject,
        busy_reply=BUSY,
    )
    # No worker yet: the first message's turn stays queued and the scope busy.
    msgs = [group_msg(f"第{i}句", 70 + i) for i in range(4)]
    handles = [enqueue_turn("telegram", m, bot="neko") for m in msgs]
    assert [h.reason for h in handles[1:]] == ["busy"] * 3
    workers.start(extra_env={**tg, **env})
    wait_for(delivered(live.engine), 90, "the turn and the busy reply", workers.logs)
    texts = bot_api.texts(GROUP)
    assert len(texts) == 2 and texts.count(BUSY) == 1, texts
    notices = [r for r in runs(live.engine) if r.reason == "busy"]
    assert len(notices) == 1 and notices[0].delivery_status == "sent"


def test_stale_reply_once_per_window_and_silence_when_unset(
    live, workers, tg, bot_api: FakeBotApi, tmp_path
) -> None:
    from tasks import enqueue_turn

    # Telegram's test messages are dated 2023: with a max age they are stale.
    env = configure(
        live,
        tmp_path,
        f"max_age_seconds = 60\nstale_reply = {STALE}\n",
        max_age_seconds=60,
        stale_reply=STALE,
    )
    workers.start(extra_env={**tg, **env})
    for i in range(3):
        enqueue_turn("telegram", private_msg(f"早{i}", 80 + i), bot="neko")
    wait_for(delivered(live.engine), 90, "the stale turns", workers.logs)
    assert bot_api.texts(CHAT) == [STALE]
    statuses = sorted((r.reason, r.delivery_status) for r in runs(live.engine))
    assert statuses == [("stale", "not_sent"), ("stale", "not_sent"), ("stale", "sent")]
    # Another group without a reply configured stays silent.
    env = configure(live, tmp_path, "max_age_seconds = 60\n", max_age_seconds=60)
    workers.stop_all()
    workers.start(extra_env={**tg, **env}, name="silent")
    enqueue_turn("telegram", group_msg("晚安", 89), bot="neko")
    wait_for(delivered(live.engine), 90, "the silent stale turn", workers.logs)
    assert bot_api.texts(GROUP) == []


def test_quota_reply_once_per_window(live, workers, tg, bot_api: FakeBotApi, tmp_path) -> None:
    from tasks import enqueue_turn

    env = configure(
        live,
        tmp_path,
        f"daily_tokens_scope = 1\nquota_reply = {QUOTA}\n",
        daily_tokens_scope=1,
        quota_reply=QUOTA,
    )
    workers.start(extra_env={**tg, **env})
    enqueue_turn("telegram", group_msg("第一句", 90), bot="neko")
    wait_for(delivered(live.engine), 90, "the first turn", workers.logs)
    for i in range(2):
        enqueue_turn("telegram", group_msg(f"再来{i}", 91 + i), bot="neko")
    wait_for(delivered(live.engine), 90, "the turns over quota", workers.logs)
    texts = bot_api.texts(GROUP)
    assert len(texts) == 2 and texts[1] == QUOTA, texts
    over = sorted(r.delivery_status for r in runs(live.engine) if r.reason == "quota_exceeded")
    assert over == ["not_sent", "sent"]
