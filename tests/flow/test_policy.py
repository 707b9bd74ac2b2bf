"""Flow policies from config.ini: parsing, errors naming the key, debounce and staleness."""

from __future__ import annotations

import configparser

import pytest

from nekoflow.errors import ConfigError
from nekoflow.flow.policy import FlowPolicy, OnBusy, Rate, parse_flow_config


def parse(text: str):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    return parse_flow_config(parser)


def test_global_section_and_channel_overrides() -> None:
    cfg = parse(
        """
[character_runtime_qq]
trigger = mention
[conversation_flow]
on_busy = merge
debounce_seconds = 1.5
debounce_max_seconds = 6
rate_limit_user = 10/60
[conversation_flow_telegram]
on_busy = reject
rate_limit_group =
"""
    )
    assert cfg.default.on_busy == OnBusy.merge and cfg.default.debounce_seconds == 1.5
    assert cfg.default.rate_limit_user == Rate(count=10, period=60)
    tg = cfg.for_channel("Telegram")
    assert tg.on_busy == OnBusy.reject and tg.rate_limit_user == Rate(count=10, period=60)
    assert tg.rate_limit_group is None
    assert cfg.for_channel("qq") == cfg.default


def test_no_section_means_todays_behaviour() -> None:
    assert parse("").for_channel("web") == FlowPolicy()
    assert FlowPolicy().on_busy == OnBusy.queue and not FlowPolicy().max_age_seconds


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("on_busy = sometimes", "conversation_flow.on_busy"),
        ("debounce_seconds = soon", "conversation_flow.debounce_seconds"),
        ("debounce_seconds = -1", "conversation_flow.debounce_seconds"),
        ("rate_limit_user = ten", "conversation_flow.rate_limit_user"),
        ("rate_limit_user = 0/60", "conversation_flow.rate_limit_user"),
        ("colour = blue", "conversation_flow.colour"),
    ],
)
def test_bad_values_name_the_section_and_key(body: str, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse(f"[conversation_flow]\n{body}\n")
    assert info.value.field == field
    assert field.split(".")[1] in str(info.value)


def test_debounce_is_extended_by_each_message_up_to_the_maximum() -> None:
    p = FlowPolicy(on_busy=OnBusy.merge, debounce_seconds=1.5, debounce_max_seconds=4)
    assert p.debounce_until(first_at=100.0, now=100.0) == 101.5
    assert p.debounce_until(first_at=100.0, now=102.0) == 103.5
    assert p.debounce_until(first_at=100.0, now=103.9) == 104.0  # capped


def test_staleness_is_off_by_default() -> None:
    assert not FlowPolicy().is_stale(0.0, 10_000.0)
    p = FlowPolicy(max_age_seconds=60)
    assert p.is_stale(0.0, 61.0) and not p.is_stale(0.0, 59.0)
