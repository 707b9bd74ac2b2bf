"""Registers OneBot's destination (channel ``qq``), sender and rate limits with the registry."""

from nekoflow.delivery.registry import register_destination, register_rate_limits, register_sender
from nekoflow.platforms.onebot.sender import (
    PLATFORM,
    make_onebot_sender,
    onebot_destination,
    onebot_limits,
)

register_destination("qq", onebot_destination)
register_sender(PLATFORM, make_onebot_sender)
register_rate_limits(PLATFORM, onebot_limits)
