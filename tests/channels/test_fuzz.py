"""Hypothesis: any JSON fed to any adapter's parse_event gives a ChatRequest, None or the
project's own InputError — never an exception from deep inside."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nekoflow.channels import (
    ChatRequest,
    FeishuChannelAdapter,
    QQBotChannelAdapter,
    QQChannelAdapter,
    TelegramChannelAdapter,
    WebChannelAdapter,
)
from nekoflow.errors import InputError

ADAPTERS = [
    QQChannelAdapter(bot_uin=3889000001),
    QQChannelAdapter(),
    QQBotChannelAdapter(bot_appid="5566"),
    FeishuChannelAdapter(bot_open_id="ou_bot_open_id"),
    TelegramChannelAdapter(bot_username="neko_rp_bot"),
    TelegramChannelAdapter(),
    WebChannelAdapter(),
]
EVENTS = Path(__file__).parent / "events"
SAMPLES = {
    path.stem: json.loads(path.read_text(encoding="utf-8"))
    for path in sorted(EVENTS.glob("*.json"))
}
# each adapter's own platform samples (file name prefix), mutated to reach deep parse paths
OWN_PREFIX = {
    QQChannelAdapter: "onebot_",
    QQBotChannelAdapter: "qqbot_",
    FeishuChannelAdapter: "feishu_",
    TelegramChannelAdapter: "telegram_",
    WebChannelAdapter: "web_",
}
KEYS = sorted(
    {
        "post_type",
        "message_type",
        "self_id",
        "user_id",
        "group_id",
        "message",
        "raw_message",
        "sender",
        "op",
        "t",
        "d",
        "author",
        "content",
        "mentions",
        "attachments",
        "group_openid",
        "schema",
        "header",
        "event",
        "event_type",
        "chat_type",
        "update_id",
        "edited_message",
        "chat",
        "from",
        "text",
        "caption",
        "entities",
        "photo",
        "reply_to_message",
        "type",
        "session_id",
        "data",
        "qq",
        "id",
        "is_bot",
        "bot",
        "channel_id",
        "guild_id",
    }
)

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.sampled_from(
        [
            "message",
            "group",
            "private",
            "GROUP_AT_MESSAGE_CREATE",
            "C2C_MESSAGE_CREATE",
            "MESSAGE_CREATE",
            "im.message.receive_v1",
            "p2p",
            "text",
            "post",
            "at",
            "2.0",
            "[CQ:at,qq=all]",
            '{"text":"@_user_1 hi"}',
            "supergroup",
        ]
    )
)
JSON = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=25,
)


def check(adapter: Any, raw: Any) -> None:
    try:
        result = adapter.parse_event(raw)
    except InputError as exc:
        assert exc.field, "a parse error must name the field"
        return
    assert result is None or isinstance(result, ChatRequest)


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: type(a).__name__)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=JSON)
def test_arbitrary_json(adapter: Any, raw: Any) -> None:
    check(adapter, raw)
    check(adapter, json.dumps(raw))


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += _paths(child, (*prefix, index))
    return out


@st.composite
def mutated_events(draw: st.DrawFn, prefix: str = "") -> Any:
    """A real sample event with a few subtrees replaced by arbitrary JSON or removed."""
    names = [name for name in SAMPLES if name.startswith(prefix)]
    event = copy.deepcopy(SAMPLES[draw(st.sampled_from(names))])
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = [p for p in _paths(event) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = event
        for part in path[:-1]:
            parent = parent[part]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(JSON)
    return event


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: type(a).__name__)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_real_events(adapter: Any, data: st.DataObject) -> None:
    check(adapter, data.draw(mutated_events()))  # any platform's event
    check(adapter, data.draw(mutated_events(OWN_PREFIX[type(adapter)])))  # its own platform's


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: type(a).__name__)
def test_own_samples_parse_and_others_are_handled(adapter: Any) -> None:
    for name, sample in SAMPLES.items():
        if name.startswith(OWN_PREFIX[type(adapter)]):
            assert isinstance(adapter.parse_event(sample), ChatRequest), name
        else:
            check(adapter, sample)


HOSTILE_VALUES = {
    "nan": float("nan"),
    "infinity": float("inf"),
    "lone-surrogate": "\ud800 hi",
    "nul": "a\x00b",
    "deep": json.loads("[" * 500 + "]" * 500),
}


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: type(a).__name__)
@pytest.mark.parametrize("name", sorted(HOSTILE_VALUES))
def test_hostile_values_in_every_field_of_own_samples(adapter: Any, name: str) -> None:
    """NaN, 1e999, a lone surrogate, NUL and deep nesting put into each field of the adapter's
    own samples: a ChatRequest, a skip, or an InputError naming the field — nothing else."""
    value = HOSTILE_VALUES[name]
    for sample_name, sample in SAMPLES.items():
        if not sample_name.startswith(OWN_PREFIX[type(adapter)]):
            continue
        for path in _paths(sample)[1:]:
            mutated = json.loads(json.dumps(sample))
            target = mutated
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
            check(adapter, mutated)
