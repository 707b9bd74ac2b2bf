"""The delivery interface every platform sender implements (pure: no Celery, Redis or SQL).

A turn's rendered reply is cut into :class:`Chunk`s; the deliver stage sends each chunk to a
:class:`Destination` through the platform's :class:`Sender`, exactly once per chunk where the
platform allows it. A sender tells the stage what happened by returning a :class:`SendResult`
or raising :class:`RetryLater` (not sent), :class:`Unconfirmed` (maybe sent: resent only where
the platform deduplicates) or :class:`PermanentFailure`. Reasons are our own words plus status
and error codes, never the platform's free text (which may quote the message).

Senders that hand a chunk to another process which confirms it later (the OneBot reverse
WebSocket gateway) return ``SendResult(handed_over=True)``; the outbox row then stays
``handed_over`` until the gateway calls ``nekoflow.delivery.outbox.confirm_sent`` (or
``confirm_failed``) with the same idempotency key.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from nekoflow.errors import NekoflowError


class Destination(BaseModel):
    """Where a turn's reply goes: platform, bot, chat, and what to reply to."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: The sender's platform ("telegram", "onebot", …); the channel maps to it.
    platform: str = Field(min_length=1)
    #: Which bot of the platform sends (bot name / self id); "" = the platform's default bot.
    bot: str = ""
    #: The platform's chat kind ("private", "group", "supergroup", "channel", …).
    chat_type: str = ""
    chat_id: str = Field(min_length=1)
    #: The platform message id the reply quotes, if any.
    reply_to: str | None = None
    #: A forum topic / thread the reply belongs to, if any.
    thread_id: str | None = None
    #: Anything else a platform needs (e.g. OneBot ``user_id`` for a private chat).
    extra: dict[str, str] = Field(default_factory=dict)

    def rate_key(self) -> str:
        """The destination as a short key for rate limits and logs (ids only, no text)."""
        return f"{self.platform}:{self.bot}:{self.chat_id}"


class Chunk(BaseModel):
    """One message of a rendered reply, as the channel adapter rendered it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int = Field(ge=0)
    #: ``text``, ``image``, … (the rendered message's ``type``).
    kind: str = "text"
    #: The adapter's rendered message, e.g. ``{"type": "text", "content": "…"}``.
    payload: dict[str, Any] = Field(default_factory=dict)


class SendResult(BaseModel):
    """What a successful send produced."""

    model_config = ConfigDict(frozen=True)

    platform_message_id: str | None = None
    #: True when the chunk was handed to a gateway process that confirms it later.
    handed_over: bool = False


class DeliveryError(NekoflowError):
    """A chunk could not be sent; ``reason`` is safe to store and show (no message text)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RetryLater(DeliveryError):
    """A temporary failure (429, 5xx, a request that never went out): try again, after
    ``retry_after`` seconds when the platform says so."""

    def __init__(self, reason: str, *, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class Unconfirmed(RetryLater):
    """The request may have reached the platform (read or write timeout, connection lost after
    the request went out, an answer whose code does not say "not sent"): sent again only where
    the platform deduplicates or the operator chose at least once, else the chunk is recorded
    ``unknown``."""


class PermanentFailure(DeliveryError):
    """A failure that retrying cannot fix (bot blocked, chat not found, bad token, 4xx)."""


@runtime_checkable
class Sender(Protocol):
    """Sends chunks to one bot of one platform (like an httpx transport: small, stateless)."""

    def send(self, dest: Destination, chunk: Chunk, *, key: str) -> SendResult:
        """Send one chunk; ``key`` = ``"{turn_id}:{index}"`` is stable across retries.

        Raises :class:`RetryLater` (not sent), :class:`Unconfirmed` (maybe sent) or
        :class:`PermanentFailure`; anything else counts as a temporary failure.
        """
        ...

    def typing(self, dest: Destination) -> None:
        """Show a typing indicator where the platform has one (best effort; may do nothing)."""
        ...


class RateLimit(BaseModel):
    """At most ``count`` messages per ``period`` seconds for everything sharing ``key``."""

    model_config = ConfigDict(frozen=True)

    key: str = Field(min_length=1)
    count: int = Field(ge=1)
    period: float = Field(gt=0)
