"""Pure proactive decisions with an injected clock: greeting, due times, quiet hours, the
unanswered limit, and the config.ini sections."""

from __future__ import annotations

import configparser
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from nekoflow.errors import ConfigError
from nekoflow.proactive.config import ProactivePolicy, parse_duration, parse_proactive_config
from nekoflow.proactive.decide import (
    decide_fire,
    follow_up_at,
    greeting_to_deliver,
    in_quiet_hours,
    jitter_fraction,
    next_follow_up,
    quiet_hours_end,
)

T0 = datetime(2026, 3, 2, 4, 0, tzinfo=UTC)  # 12:00 in Asia/Shanghai


def _line(turn_id: str, attribute: str, content: str = "") -> SimpleNamespace:
    return SimpleNamespace(turn_id=turn_id, attribute=attribute, content=content)


def test_greeting_goes_with_the_first_answered_turn_only() -> None:
    greeting = _line("greeting:7", "assistant", "你醒啦")
    assert greeting_to_deliver([greeting], 7) == "你醒啦"
    # a failed or superseded first turn left only its user line: the next turn delivers it
    assert greeting_to_deliver([greeting, _line("t1", "user", "hi")], 7) == "你醒啦"
    # once the character answered after it, never again
    answered = [greeting, _line("t1", "user"), _line("t1", "assistant", "喵")]
    assert greeting_to_deliver(answered, 7) is None
    assert greeting_to_deliver([], 7) is None
    assert greeting_to_deliver([_line("greeting:8", "assistant", "别的存档")], 7) is None


def _config(text: str):
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=(";",))
    parser.read_string(text)
    return parse_proactive_config(parser)


def test_config_layers_global_channel_scope() -> None:
    config = _config(
        """
[proactive]
follow_up_after = 6h
quiet_hours = 23:00-08:00
timezone = Asia/Shanghai
[proactive_telegram]
follow_up_after = 2d ; comment
max_unanswered = 3
[proactive_scope:telegram:private:42]
greeting = off
reminders = yes
"""
    )
    assert config.for_scope("qq", "x").follow_up_after == 6 * 3600
    tg = config.for_scope("Telegram", "telegram:private:1")
    assert (tg.follow_up_after, tg.max_unanswered, tg.greeting) == (2 * 86400, 3, True)
    one = config.for_scope("telegram", "telegram:private:42")
    assert (one.greeting, one.reminders, one.max_unanswered) == (False, True, 3)
    assert config.any_enabled()
    assert not _config("").any_enabled()
    assert _config("").for_scope("qq").greeting is True


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[proactive]\nfollow_up_after = soon", "proactive.follow_up_after"),
        ("[proactive_qq]\nquiet_hours = 25:00-01:00", "proactive_qq.quiet_hours"),
        ("[proactive]\ntimezone = Mars/Base", "proactive.timezone"),
        ("[proactive]\nmax_unanswered = 0", "proactive.max_unanswered"),
        ("[proactive]\nfollow_up_jitter = 1.5", "proactive.follow_up_jitter"),
        ("[proactive]\ngreeting = maybe", "proactive.greeting"),
        ("[proactive]\nbogus = 1", "proactive.bogus"),
    ],
)
def test_bad_config_names_section_and_key(text: str, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        _config(text)
    assert err.value.field == field


def test_durations() -> None:
    assert [parse_duration(v) for v in ("90m", "6h", "2d", "30", "1.5h")] == [
        5400,
        21600,
        172800,
        30,
        5400,
    ]


def test_follow_up_time_is_jittered_by_a_seed_not_by_chance() -> None:
    policy = ProactivePolicy(follow_up_after=3600, follow_up_jitter=0.25)
    a = follow_up_at(T0, policy, "scope-a:turn-1:1")
    assert a == follow_up_at(T0, policy, "scope-a:turn-1:1")  # every process agrees
    b = follow_up_at(T0, policy, "scope-b:turn-9:1")
    assert a != b
    fractions = [jitter_fraction(f"s{i}") for i in range(200)]
    assert all(-1 <= f < 1 for f in fractions)
    assert min(fractions) < -0.5 and max(fractions) > 0.5  # spread, not clustered
    for at in (a, b):
        assert at is not None
        assert timedelta(minutes=45) <= at - T0 <= timedelta(minutes=75)
    assert follow_up_at(T0, ProactivePolicy(), "x") is None  # opt-in


def test_quiet_hours_cross_midnight_in_the_scope_time_zone() -> None:
    policy = ProactivePolicy.model_validate(
        {"quiet_hours": {"start": "23:00", "end": "08:00"}, "timezone": "Asia/Shanghai"}
    )
    assert not in_quiet_hours(T0, policy)  # 12:00 local
    late = datetime(2026, 3, 2, 15, 30, tzinfo=UTC)  # 23:30 local
    early = datetime(2026, 3, 2, 23, 59, tzinfo=UTC)  # 07:59 local next day
    assert in_quiet_hours(late, policy) and in_quiet_hours(early, policy)
    assert quiet_hours_end(late, policy) == datetime(2026, 3, 3, 0, 0, tzinfo=UTC)  # 08:00
    assert quiet_hours_end(early, policy) == datetime(2026, 3, 3, 0, 0, tzinfo=UTC)
    assert quiet_hours_end(T0, policy) == T0
    assert not in_quiet_hours(late, ProactivePolicy())


def test_decide_fire() -> None:
    policy = ProactivePolicy.model_validate(
        {
            "follow_up_after": 3600,
            "max_unanswered": 2,
            "quiet_hours": {"start": "23:00", "end": "08:00"},
            "timezone": "Asia/Shanghai",
        }
    )

    def fire(kind: str = "follow_up", now: datetime = T0, wrote: bool = False, n: int = 0):
        return decide_fire(kind=kind, now=now, policy=policy, user_wrote_since=wrote, unanswered=n)

    assert fire().kind == "fire"
    assert fire(wrote=True).kind == "drop"
    assert fire(n=1).kind == "fire" and fire(n=2).kind == "drop"
    quiet = fire(now=datetime(2026, 3, 2, 15, 30, tzinfo=UTC))
    assert (quiet.kind, quiet.at) == ("later", datetime(2026, 3, 3, 0, 0, tzinfo=UTC))
    assert fire("reminder").kind == "drop"  # reminders are opt-in
    on_at_night = decide_fire(
        kind="reminder",
        now=datetime(2026, 3, 2, 22, 0, tzinfo=UTC),  # 06:00 local: quiet, but asked for
        policy=policy.model_copy(update={"reminders": True}),
        user_wrote_since=False,
        unanswered=0,
    )
    assert on_at_night.kind == "fire"
    on = policy.model_copy(update={"reminders": True})
    assert (
        decide_fire(kind="reminder", now=T0, policy=on, user_wrote_since=True, unanswered=5).kind
        == "fire"
    )  # a promise is kept whatever the user said since
    assert next_follow_up(T0, policy, unanswered=1, seed="s") is not None
    assert next_follow_up(T0, policy, unanswered=2, seed="s") is None


def test_a_proactive_request_keeps_the_chat_not_the_message() -> None:
    from nekoflow.proactive.turns import instruction, proactive_label, proactive_request

    anchor = {
        "channel": "telegram",
        "conversation_id": "42",
        "user_id": "42",
        "content": "我去睡了",
        "message_id": "77",
        "attachments": [{"type": "image"}],
        "metadata": {"date": 1700000000, "chat_type": "private", "edited": True},
    }
    req = proactive_request(anchor, kind="follow_up", schedule_id=5, n=2, now=T0)
    assert (req["content"], req["message_id"], req["attachments"]) == ("", "", [])
    assert req["metadata"] == {
        "chat_type": "private",
        "proactive": {"kind": "follow_up", "schedule": 5, "n": 2},
        "sent_at": T0.isoformat(),
    }
    assert proactive_label(req) == "proactive follow_up #2"
    assert proactive_label(anchor) is None
    assert "3天" in instruction("follow_up", gap_seconds=3 * 86400)
    assert "「起床」" in instruction("reminder", gap_seconds=None, note="起床")


def test_the_guide_configuration_parses() -> None:
    from pathlib import Path

    guide = Path(__file__).parents[2] / "docs/en/guides/proactive.md"
    block = guide.read_text(encoding="utf-8").split("```ini\n", 1)[1].split("```", 1)[0]
    config = _config(block)
    tg = config.for_scope("telegram", "telegram:private:1")
    assert (tg.follow_up_after, tg.reminders, tg.timezone) == (2 * 86400, True, "Asia/Shanghai")
    qq = config.for_scope("qq", "qq:private:10001")
    assert qq.quiet_hours is not None and qq.quiet_hours.end.hour == 10
