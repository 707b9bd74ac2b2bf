"""Platform adapters, one module per platform, and ``get_adapter`` to build one by name."""

from __future__ import annotations

import inspect
from typing import Any

from nekoflow.channels.adapters.base import BaseChannelAdapter
from nekoflow.channels.adapters.feishu import FeishuChannelAdapter
from nekoflow.channels.adapters.qq import QQChannelAdapter
from nekoflow.channels.adapters.qqbot import QQBotChannelAdapter
from nekoflow.channels.adapters.telegram import TelegramChannelAdapter
from nekoflow.channels.adapters.web import WebChannelAdapter
from nekoflow.errors import ConfigError

ADAPTERS: dict[str, type[BaseChannelAdapter]] = {
    "qq": QQChannelAdapter,
    "qqbot": QQBotChannelAdapter,
    "feishu": FeishuChannelAdapter,
    "telegram": TelegramChannelAdapter,
    "web": WebChannelAdapter,
}
ALIASES: dict[str, str] = {"onebot": "qq", "lark": "feishu"}


def get_adapter(channel_name: str, **options: Any) -> BaseChannelAdapter:
    """A new adapter for ``channel_name`` (qq, qqbot, feishu, telegram, web; aliases onebot,
    lark), built with ``options`` (e.g. ``bot_uin=…``). Unknown names/options → ConfigError."""
    name = ALIASES.get(channel_name.strip().lower(), channel_name.strip().lower())
    cls = ADAPTERS.get(name)
    if cls is None:
        known = ", ".join(sorted(ADAPTERS))
        raise ConfigError(f"unknown channel {channel_name!r} (known: {known})", field="channel")
    try:
        inspect.signature(cls).bind(**options)
    except TypeError as exc:
        raise ConfigError(f"bad options for the {name} adapter: {exc}", field="options") from exc
    return cls(**options)


__all__ = [
    "ADAPTERS",
    "BaseChannelAdapter",
    "FeishuChannelAdapter",
    "QQBotChannelAdapter",
    "QQChannelAdapter",
    "TelegramChannelAdapter",
    "WebChannelAdapter",
    "get_adapter",
]
