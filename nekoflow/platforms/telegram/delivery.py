"""Registers Telegram's destination, sender, rate limits and bot options with
``nekoflow.delivery``."""

from typing import Any

from nekoflow.delivery.registry import (
    register_bot_options,
    register_destination,
    register_rate_limits,
    register_sender,
)
from nekoflow.platforms.telegram.sender import (
    PLATFORM,
    make_telegram_sender,
    telegram_destination,
    telegram_limits,
)
from nekoflow.platforms.telegram.settings import get_telegram_settings


def telegram_bot_options(bot: str | None) -> dict[str, Any]:
    """The bot's ``bot_username`` (so group @mentions of it count); empty when it has none."""
    found = get_telegram_settings().bot(bot)
    return {"bot_username": found.bot_username} if found and found.bot_username else {}


register_destination("telegram", telegram_destination)
register_sender(PLATFORM, make_telegram_sender)
register_rate_limits(PLATFORM, telegram_limits)
register_bot_options("telegram", telegram_bot_options)
