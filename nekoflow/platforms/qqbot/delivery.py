"""Registers the QQ bot's destination, senders and rate limits with ``nekoflow.delivery``."""

from nekoflow.delivery.registry import register_destination, register_rate_limits, register_sender
from nekoflow.platforms.qqbot.rules import (
    ACTIVE_PLATFORM,
    GUILD_PLATFORM,
    PLATFORM,
    qqbot_destination,
    qqbot_limits,
)
from nekoflow.platforms.qqbot.sender import (
    make_qqbot_active_sender,
    make_qqbot_guild_sender,
    make_qqbot_sender,
)

register_destination("qqbot", qqbot_destination)
register_sender(PLATFORM, make_qqbot_sender)
register_sender(ACTIVE_PLATFORM, make_qqbot_active_sender)
register_sender(GUILD_PLATFORM, make_qqbot_guild_sender)
register_rate_limits(PLATFORM, qqbot_limits)
register_rate_limits(ACTIVE_PLATFORM, qqbot_limits)
register_rate_limits(GUILD_PLATFORM, qqbot_limits)
