"""Registers Feishu's destination, sender and rate limits with ``nekoflow.delivery``."""

from nekoflow.delivery.registry import register_destination, register_rate_limits, register_sender
from nekoflow.platforms.feishu.sender import (
    PLATFORM,
    feishu_destination,
    feishu_limits,
    make_feishu_sender,
)

register_destination("feishu", feishu_destination)
register_sender(PLATFORM, make_feishu_sender)
register_rate_limits(PLATFORM, feishu_limits)
