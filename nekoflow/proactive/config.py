"""Proactive-message configuration per channel and scope (pure), read from ``config.ini``::

    [proactive]                  ; every channel
    greeting = true              ; deliver the card's greeting before the first reply
    follow_up_after =            ; silence before the character writes: 90m, 6h, 2d (empty = off)
    follow_up_jitter = 0.2       ; ± this fraction of the gap (seeded per scope, not random)
    max_unanswered = 2           ; proactive messages in a row without an answer, then it stops
    quiet_hours = 23:00-08:00    ; no proactive message in these local hours (empty = none)
    timezone = Asia/Shanghai     ; the scope's time zone for quiet hours
    reminders = false            ; promised reminders from memories ("明天早上叫我起床")

    [proactive_telegram]         ; one channel (overrides the keys it sets)
    follow_up_after = 1d

    [proactive_scope:<scope id>] ; one scope (overrides its channel's keys)
    quiet_hours = 00:00-09:00

Follow-ups and reminders are opt-in; the greeting is on unless ``greeting = false``. A bad value
is a :class:`nekoflow.errors.ConfigError` naming the section and key.
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Mapping
from datetime import time
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from nekoflow.errors import ConfigError

GLOBAL_SECTION = "proactive"
CHANNEL_PREFIX = "proactive_"
SCOPE_PREFIX = "proactive_scope:"

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class QuietHours(BaseModel):
    """Local hours with no proactive message: ``start`` to ``end`` (may cross midnight)."""

    model_config = ConfigDict(frozen=True)

    start: time
    end: time


class ProactivePolicy(BaseModel):
    """What one channel or scope allows the character to start."""

    model_config = ConfigDict(frozen=True)

    greeting: bool = True
    #: Seconds of silence before a follow-up (None: no follow-ups).
    follow_up_after: float | None = Field(default=None, gt=0)
    follow_up_jitter: float = Field(default=0.2, ge=0, lt=1)
    max_unanswered: int = Field(default=2, ge=1)
    quiet_hours: QuietHours | None = None
    timezone: str = "UTC"
    reminders: bool = False

    def zone(self) -> ZoneInfo:
        """The scope's time zone."""
        return ZoneInfo(self.timezone)


class ProactiveConfig(BaseModel):
    """The global policy, per-channel and per-scope overrides (as raw keys over the global)."""

    default: ProactivePolicy = Field(default_factory=ProactivePolicy)
    channels: dict[str, dict[str, Any]] = Field(default_factory=dict)
    scopes: dict[str, dict[str, Any]] = Field(default_factory=dict)
    _policies: dict[tuple[str, str | None], ProactivePolicy] = PrivateAttr(default_factory=dict)

    def for_scope(self, channel: str, scope_id: str | None = None) -> ProactivePolicy:
        """The policy of ``scope_id`` in ``channel``: global, then channel, then scope keys
        (built once per channel and configured scope: every turn asks)."""
        channel = channel.strip().lower()
        key = (channel, scope_id if scope_id in self.scopes else None)
        policy = self._policies.get(key)
        if policy is None:
            values = self.default.model_dump()
            values.update(self.channels.get(channel, {}))
            if key[1] is not None:
                values.update(self.scopes[key[1]])
            policy = self._policies[key] = ProactivePolicy.model_validate(values)
        return policy

    def any_enabled(self) -> bool:
        """True when some channel or scope has follow-ups or reminders on."""
        layers = [self.default.model_dump(), *self.channels.values(), *self.scopes.values()]
        return any(layer.get("follow_up_after") or layer.get("reminders") for layer in layers)


def _bad(section: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"[{section}] {key}: {message}", field=f"{section}.{key}")


def parse_duration(value: str, section: str = GLOBAL_SECTION, key: str = "duration") -> float:
    """Seconds in ``90m``, ``6h``, ``2d``, ``3600`` (plain seconds); bad input names the key."""
    text = value.strip().lower()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([smhd]?)", text)
    if m is None:
        raise _bad(section, key, f"expected a duration like 90m, 6h or 2d, got {value.strip()!r}")
    seconds = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if seconds <= 0:
        raise _bad(section, key, "must be more than 0")
    return seconds


def _clock(text: str, section: str, key: str) -> time:
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", text.strip())
    if m is None or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise _bad(section, key, f"expected HH:MM-HH:MM like 23:00-08:00, got {text.strip()!r}")
    return time(int(m.group(1)), int(m.group(2)))


def _bool(value: str, section: str, key: str) -> bool:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise _bad(section, key, f"expected a boolean (true/false/yes/no/on/off/1/0), got {value!r}")


def _values(raw: Mapping[str, str], section: str) -> dict[str, Any]:
    """The keys a section sets, parsed (unknown keys and bad values are errors)."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in ProactivePolicy.model_fields:
            allowed = ", ".join(sorted(ProactivePolicy.model_fields))
            raise _bad(section, key, f"unknown key (expected one of: {allowed})")
        text = value.strip()
        if key in ("greeting", "reminders"):
            out[key] = _bool(text, section, key)
        elif key == "follow_up_after":
            out[key] = parse_duration(text, section, key) if text else None
        elif key == "follow_up_jitter":
            try:
                jitter = float(text or 0)
            except ValueError:
                raise _bad(section, key, f"expected a fraction like 0.2, got {text!r}") from None
            if not 0 <= jitter < 1:
                raise _bad(section, key, "must be >= 0 and < 1")
            out[key] = jitter
        elif key == "max_unanswered":
            if not text.isdigit() or int(text) < 1:
                raise _bad(section, key, f"expected a whole number >= 1, got {text!r}")
            out[key] = int(text)
        elif key == "quiet_hours":
            if not text:
                out[key] = None
                continue
            start, sep, end = text.partition("-")
            if not sep:
                raise _bad(section, key, f"expected HH:MM-HH:MM like 23:00-08:00, got {text!r}")
            out[key] = QuietHours(
                start=_clock(start, section, key), end=_clock(end, section, key)
            ).model_dump()
        else:  # timezone
            try:
                ZoneInfo(text)
            except (ZoneInfoNotFoundError, ValueError):
                raise _bad(
                    section, key, f"unknown time zone {text!r} (e.g. Asia/Shanghai)"
                ) from None
            out[key] = text
    return out


def parse_proactive_config(parser: configparser.ConfigParser) -> ProactiveConfig:
    """The ``proactive`` sections of a parsed ini file (other sections are ignored)."""
    inherited = set(parser.defaults())

    def items(name: str) -> dict[str, str]:
        return {k: v for k, v in parser.items(name, raw=True) if k not in inherited}

    default = ProactivePolicy()
    if parser.has_section(GLOBAL_SECTION):
        default = ProactivePolicy.model_validate(
            default.model_dump() | _values(items(GLOBAL_SECTION), GLOBAL_SECTION)
        )
    channels: dict[str, dict[str, Any]] = {}
    scopes: dict[str, dict[str, Any]] = {}
    for name in parser.sections():
        if name.startswith(SCOPE_PREFIX):
            scope = name[len(SCOPE_PREFIX) :].strip()
            if not scope:
                raise ConfigError(f"[{name}] needs a scope id", field=name)
            scopes[scope] = _values(items(name), name)
        elif name.startswith(CHANNEL_PREFIX):
            channels[name[len(CHANNEL_PREFIX) :].strip().lower()] = _values(items(name), name)
    config = ProactiveConfig(default=default, channels=channels, scopes=scopes)
    for channel in channels:  # a combination that does not validate is an error now, not later
        config.for_scope(channel)
    return config


def load_proactive_config(path: str | Path) -> ProactiveConfig:
    """The proactive configuration in the ini file at ``path`` (defaults when it is absent)."""
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=(";",))
    p = Path(path)
    if p.exists():
        try:
            parser.read(p, encoding="utf-8")
        except configparser.Error as exc:
            raise ConfigError(f"{p}: not a valid ini file ({type(exc).__name__})") from None
    return parse_proactive_config(parser)
