"""Flow policies per channel (pure): on_busy, debounce, stale messages and rate limits.

Configured in ``config.ini`` beside the character-runtime sections::

    [conversation_flow]            ; every channel
    on_busy = queue                ; queue | merge | interrupt | reject
    debounce_seconds = 1.5         ; merge: wait this long after a message for more …
    debounce_max_seconds = 6       ; … but never longer than this after the first one
    max_age_seconds = 0            ; a turn whose message is older when it starts: skipped (0 = off)
    rate_limit_user = 10/60        ; messages / seconds, per user of a channel
    rate_limit_group = 30/60       ; per group
    rate_limit_channel =           ; per channel (empty = no limit)
    ; over a limit: this short reply, at most once per window (empty = none; no inline comment)
    rate_limit_reply = 慢一点，我跟不上啦
    ; skipped "busy" (reject), "stale", "quota_exceeded": these replies, each at most once per
    ; scope per notice_window_seconds (empty or absent = silence, the default)
    busy_reply = 稍等，我还在回上一条
    stale_reply =
    quota_reply =
    notice_window_seconds = 60
    daily_tokens_user = 200000     ; token quota per UTC day: _scope, _user, _channel, _character
    quota_fallback_model =         ; over quota: answer with this model instead of skipping

    [conversation_flow_qq]         ; one channel (overrides the keys it sets)
    on_busy = merge

A bad value is a :class:`nekoflow.errors.ConfigError` naming the section and key.
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nekoflow.errors import ConfigError

GLOBAL_SECTION = "conversation_flow"
CHANNEL_PREFIX = "conversation_flow_"
REPLY_MAX_CHARS = 500
"""The longest ``rate_limit_reply`` accepted (it is meant to be one short line)."""


class OnBusy(StrEnum):
    """What a message does when its scope already has a turn queued or running."""

    queue = "queue"
    merge = "merge"
    interrupt = "interrupt"
    reject = "reject"


class Rate(BaseModel):
    """At most ``count`` messages per ``period`` seconds."""

    model_config = ConfigDict(frozen=True)

    count: int = Field(ge=1)
    period: float = Field(gt=0)


class FlowPolicy(BaseModel):
    """The flow policy of one channel."""

    model_config = ConfigDict(frozen=True)

    on_busy: OnBusy = OnBusy.queue
    debounce_seconds: float = Field(default=0.0, ge=0)
    debounce_max_seconds: float = Field(default=0.0, ge=0)
    max_age_seconds: float = Field(default=0.0, ge=0)
    rate_limit_user: Rate | None = None
    rate_limit_group: Rate | None = None
    rate_limit_channel: Rate | None = None
    #: Over a rate limit: send this short reply, at most once per window of each full limit
    #: (None: skip silently).
    rate_limit_reply: str | None = Field(default=None, max_length=REPLY_MAX_CHARS)
    #: ``reject``: a message skipped ``busy`` gets this short reply (None: silence).
    busy_reply: str | None = Field(default=None, max_length=REPLY_MAX_CHARS)
    #: A turn skipped ``stale`` gets this short reply (None: silence — the user moved on).
    stale_reply: str | None = Field(default=None, max_length=REPLY_MAX_CHARS)
    #: A turn skipped ``quota_exceeded`` gets this short reply (None: silence).
    quota_reply: str | None = Field(default=None, max_length=REPLY_MAX_CHARS)
    #: ``busy_reply``/``stale_reply``/``quota_reply``: at most one of each per scope per this
    #: many seconds.
    notice_window_seconds: float = Field(default=60.0, gt=0)
    #: Token quotas per UTC day (prompt + completion, as the LLM servers reported); 0 = none.
    daily_tokens_scope: int = Field(default=0, ge=0)
    daily_tokens_user: int = Field(default=0, ge=0)
    daily_tokens_channel: int = Field(default=0, ge=0)
    daily_tokens_character: int = Field(default=0, ge=0)
    #: Over a quota: answer with this (cheaper) model instead of skipping (None: skip).
    quota_fallback_model: str | None = None

    def quotas(self, **values: str) -> list[tuple[str, int, str]]:
        """``(dimension, daily limit, value)`` for each configured quota whose value is known
        (``values``: scope, user, channel, character)."""
        out = []
        for dim in ("scope", "user", "channel", "character"):
            limit = getattr(self, f"daily_tokens_{dim}")
            if limit and values.get(dim):
                out.append((dim, limit, values[dim]))
        return out

    def debounce_until(self, first_at: float, now: float) -> float:
        """When a merged turn may start: ``debounce_seconds`` after the latest message, but no
        later than ``debounce_max_seconds`` after the first (epoch seconds)."""
        until = now + self.debounce_seconds
        if self.debounce_max_seconds:
            until = min(until, first_at + max(self.debounce_max_seconds, self.debounce_seconds))
        return until

    def is_stale(self, sent_at: float, now: float) -> bool:
        """True when a message sent at ``sent_at`` is too old to answer at ``now``."""
        return bool(self.max_age_seconds) and now - sent_at > self.max_age_seconds


class FlowConfig(BaseModel):
    """The global flow policy and per-channel overrides."""

    default: FlowPolicy = Field(default_factory=FlowPolicy)
    channels: dict[str, FlowPolicy] = Field(default_factory=dict)

    def for_channel(self, channel: str) -> FlowPolicy:
        """The policy of ``channel`` (the global one when it has no section)."""
        return self.channels.get(channel.strip().lower(), self.default)


_KEYS = set(FlowPolicy.model_fields)
_REPLY_FOR = {
    "rate_limited": "rate_limit_reply",
    "busy": "busy_reply",
    "stale": "stale_reply",
    "quota_exceeded": "quota_reply",
}
"""The reply setting of each reason a message is skipped for."""
_REPLIES = set(_REPLY_FOR.values())


def _bad(section: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"[{section}] {key}: {message}", field=f"{section}.{key}")


def _rate(value: str, section: str, key: str) -> Rate | None:
    text = value.strip()
    if not text:
        return None
    count, sep, period = text.partition("/")
    try:
        if not sep:
            raise ValueError
        return Rate(count=int(count), period=float(period))
    except ValueError:
        raise _bad(section, key, f"expected COUNT/SECONDS like 10/60, got {text!r}") from None


def _reply(value: str, section: str, key: str) -> str | None:
    text = value.strip()
    if not text:
        return None
    if len(text) > REPLY_MAX_CHARS:
        raise _bad(section, key, f"at most {REPLY_MAX_CHARS} characters, got {len(text)}")
    if any(ord(c) < 32 and c not in "\n\t" for c in text):
        raise _bad(section, key, "control characters are not allowed")
    if re.search(r"\s[;#]", text):  # ini files keep inline comments in the value: it would be sent
        raise _bad(section, key, "looks like it ends in an inline comment; put it on its own line")
    return text


def _seconds(value: str, section: str, key: str) -> float:
    try:
        seconds = float(value.strip() or 0)
    except ValueError:
        raise _bad(section, key, f"expected seconds, got {value.strip()!r}") from None
    if seconds < 0 or seconds != seconds or seconds == float("inf"):
        raise _bad(section, key, "must be a finite number of seconds >= 0")
    return seconds


def _policy(raw: Mapping[str, str], section: str, base: FlowPolicy) -> FlowPolicy:
    values: dict[str, Any] = base.model_dump()
    for key, value in raw.items():
        if key not in _KEYS:
            raise _bad(section, key, f"unknown key (expected one of: {', '.join(sorted(_KEYS))})")
        if key == "on_busy":
            choice = value.strip().lower()
            if choice not in OnBusy.__members__:
                raise _bad(section, key, f"expected one of {', '.join(OnBusy)}; got {choice!r}")
            values[key] = OnBusy(choice)
        elif key in _REPLIES:
            values[key] = _reply(value, section, key)
        elif key.startswith("rate_limit_"):
            values[key] = _rate(value, section, key)
        elif key == "quota_fallback_model":
            values[key] = value.strip() or None
        elif key.startswith("daily_tokens_"):
            try:
                values[key] = int(value.strip() or 0)
            except ValueError:
                raise _bad(
                    section, key, f"expected a whole number of tokens, got {value!r}"
                ) from None
            if values[key] < 0:
                raise _bad(section, key, "must be >= 0")
        else:
            values[key] = _seconds(value, section, key)
            if key == "notice_window_seconds" and not values[key]:
                raise _bad(section, key, "must be more than 0 seconds")
    return FlowPolicy.model_validate(values)


def reply_for(policy: FlowPolicy, reason: str) -> str | None:
    """The short reply ``policy`` sends for a message skipped with ``reason`` (None: none)."""
    field = _REPLY_FOR.get(reason)
    return getattr(policy, field) if field else None


def parse_flow_config(parser: configparser.ConfigParser) -> FlowConfig:
    """The ``conversation_flow`` sections of a parsed ini file (other sections are ignored)."""
    inherited = set(parser.defaults())

    def items(name: str) -> dict[str, str]:
        return {k: v for k, v in parser.items(name, raw=True) if k not in inherited}

    default = FlowPolicy()
    if parser.has_section(GLOBAL_SECTION):
        default = _policy(items(GLOBAL_SECTION), GLOBAL_SECTION, default)
    channels = {
        name[len(CHANNEL_PREFIX) :].strip().lower(): _policy(items(name), name, default)
        for name in parser.sections()
        if name.startswith(CHANNEL_PREFIX)
    }
    return FlowConfig(default=default, channels=channels)


def load_flow_config(path: str | Path) -> FlowConfig:
    """The flow configuration in the ini file at ``path`` (defaults when it does not exist)."""
    parser = configparser.ConfigParser(interpolation=None)
    p = Path(path)
    if p.exists():
        try:
            parser.read(p, encoding="utf-8")
        except configparser.Error as exc:
            raise ConfigError(f"{p}: not a valid ini file ({type(exc).__name__})") from None
    return parse_flow_config(parser)
