"""The states of a delivery and of each outbox chunk (plain enums: the decisions read them
without the tables)."""

from __future__ import annotations

from enum import StrEnum


class ChunkStatus(StrEnum):
    """Lifecycle of one outbox row.

    pending → sending → sent; ``handed_over`` waits for a gateway's confirmation; ``failed`` is
    permanent; ``unknown`` means the platform call may have gone through unconfirmed (a worker
    died while it was in flight, or it timed out or lost its connection after the request was
    sent) and the platform offers no idempotency, so the chunk is not sent again (it may or may
    not have arrived).
    """

    pending = "pending"
    sending = "sending"
    handed_over = "handed_over"
    sent = "sent"
    failed = "failed"
    unknown = "unknown"


SETTLED = frozenset({ChunkStatus.sent.value, ChunkStatus.failed.value, ChunkStatus.unknown.value})


class DeliveryStatus(StrEnum):
    """A turn's delivery, separate from its status: None on the TurnRun means nothing to send."""

    pending = "pending"
    sending = "sending"
    #: Every chunk is sent or with a gateway that confirms it later (order is then kept by the
    #: gateway's stream, so later replies may go).
    handed_over = "handed_over"
    sent = "sent"
    failed = "failed"
    #: Closed without sending: the turn ended with nothing to say (superseded by a newer
    #: message, skipped ``stale`` or ``quota_exceeded`` without a reply); the reason says which.
    not_sent = "not_sent"
