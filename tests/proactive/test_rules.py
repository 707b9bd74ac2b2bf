"""Platform rules for bot-started messages: the QQ official bot's active-message quotas (a
refused follow-up is recorded with its reason, never sent) and the failures that mean the user
or group is gone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from nekoflow.delivery.base import Destination
from nekoflow.proactive import store
from nekoflow.proactive.config import ProactiveConfig
from nekoflow.proactive.rules import active_quota, quota_refusal, recipient_gone
from nekoflow.proactive.tables import ProactiveSchedule
from nekoflow.turns.proactive_sweep import sweep_due

NOW = datetime(2026, 3, 20, 4, 0, tzinfo=UTC)  # 12:00 in Beijing


def _dest(platform: str, chat_type: str) -> Destination:
    return Destination(platform=platform, chat_type=chat_type, chat_id="x")


def test_quotas_per_platform_and_window() -> None:
    c2c = active_quota(_dest("qqbot-active", "c2c"))
    assert c2c is not None and c2c.count == 4
    assert c2c.since(NOW) == datetime(2026, 2, 28, 16, 0, tzinfo=UTC)  # March 1st, Beijing
    dm = active_quota(_dest("qqbot-guild", "dm"))
    assert (
        dm is not None
        and dm.count == 2
        and dm.since(NOW) == datetime(2026, 3, 19, 16, 0, tzinfo=UTC)
    )
    assert active_quota(_dest("qqbot", "c2c")) is None  # a passive reply: no quota
    assert active_quota(_dest("telegram", "private")) is None
    assert quota_refusal(c2c, 3) is None
    assert quota_refusal(c2c, 4) == "qqbot: 4 active messages per user per month used (4)"


def test_recipient_gone() -> None:
    assert recipient_gone("chunk 0: bot blocked by the user (403)")
    assert recipient_gone("chunk 1: feishu 230002 bot not in the chat")
    assert not recipient_gone("chunk 0: gave up after 5 attempt(s): HTTP 502")
    assert not recipient_gone(None)


def test_a_qq_user_gets_four_bot_started_messages_a_month(deps) -> None:
    deps.proactive = ProactiveConfig.model_validate(
        {"channels": {"qqbot": {"follow_up_after": 3600.0, "max_unanswered": 9}}}
    )
    request = {
        "channel": "qqbot",
        "conversation_id": "c2c:U1",
        "user_id": "U1",
        "metadata": {"qqbot_event_type": "C2C_MESSAGE_CREATE", "qqbot_user_openid": "U1"},
    }
    with deps.engine.begin() as conn:
        for n in range(1, 6):
            store.add_schedule(
                conn,
                ProactiveSchedule(
                    key=f"follow_up:a:{n}",
                    kind="follow_up",
                    channel="qqbot",
                    scope_id="qqbot:private:U1",
                    due_at=NOW - timedelta(days=6 - n),
                    n=n,
                    request=request,
                ),
            )
    from nekoflow.observability import metrics

    metrics.install()
    dropped = metrics.PROACTIVE.labels("follow_up", "dropped")
    before = dropped._value.get()
    fired = []
    for day in range(5, -1, -1):  # one sweep a day: one due schedule each
        fired += sweep_due(deps, NOW - timedelta(days=day)).fired
    assert len(fired) == 4
    rows = store.list_schedules(deps.engine, states=None)
    refused = [r for r in rows if r.state == "dropped"]
    assert [r.reason for r in refused] == ["qqbot: 4 active messages per user per month used (4)"]
    assert dropped._value.get() == before + 1  # nekoflow_proactive{outcome="dropped"}
