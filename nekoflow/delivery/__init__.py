"""Delivery of turn replies to chat platforms: interface, registry, outbox, decisions (the
deliver stage that uses them is ``nekoflow.turns.delivery``)."""

from nekoflow.delivery.base import (
    Chunk,
    DeliveryError,
    Destination,
    PermanentFailure,
    RateLimit,
    RetryLater,
    Sender,
    SendResult,
    Unconfirmed,
)
from nekoflow.delivery.registry import (
    destination_for,
    load_platforms,
    rate_limits_for,
    register_destination,
    register_rate_limits,
    register_sender,
    sender_for,
)

__all__ = [
    "Chunk",
    "DeliveryError",
    "Destination",
    "PermanentFailure",
    "RateLimit",
    "RetryLater",
    "SendResult",
    "Sender",
    "Unconfirmed",
    "destination_for",
    "load_platforms",
    "rate_limits_for",
    "register_destination",
    "register_rate_limits",
    "register_sender",
    "sender_for",
]
