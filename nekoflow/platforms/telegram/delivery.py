"""Registers Telegram's destination, sender and rate limits with ``nekoflow.delivery``."""

from nekoflow.delivery.registry import register_destination, register_rate_limits, register_sender
from nekoflow.platforms.telegram.sender import (
    PLATFORM,
    make_telegram_sender,
    telegram_destination,
    telegram_limits,
)

register_destination("telegram", telegram_destination)
register_sender(PLATFORM, make_telegram_sender)
register_rate_limits(PLATFORM, telegram_limits)
