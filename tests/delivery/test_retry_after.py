"""A platform's retry_after is kept on the outbox row (``not_before``), not only in the task's
countdown: a second deliver run inside the wait (sweeper, next in line, broker redelivery) does
not send and reports the wait; after it, the chunk is sent. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from nekoflow.delivery import outbox
from nekoflow.delivery.base import Chunk, Destination, RetryLater, SendResult
from nekoflow.delivery.ratelimit import InMemoryRateLimiter
from nekoflow.delivery.registry import register_destination
from nekoflow.delivery.settings import DeliverySettings
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.delivery import DeliveryDeps, deliver_turn

CHANNEL = "retry-after-test"


class FlakySender:
    """Answers the first send with a 429 carrying ``retry_after``, then takes every send."""

    idempotent = False

    def __init__(self, retry_after: float) -> None:
        self.retry_after = retry_after
        self.calls: list[int] = []

    def send(self, dest: Destination, chunk: Chunk, *, key: str) -> SendResult:
        """Record the call; the first one is rate limited."""
        self.calls.append(chunk.index)
        if len(self.calls) == 1:
            raise RetryLater("HTTP 429", retry_after=self.retry_after)
        return SendResult(platform_message_id=str(len(self.calls)))

    def typing(self, dest: Destination) -> None:
        """No typing indicator."""


class Clock:
    """A settable clock for ``DeliveryDeps.now``."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _destination(request: Any, bot: str | None) -> Destination:
    return Destination(platform="fake", bot=bot or "", chat_id=request.conversation_id)


def _turn(engine: Engine) -> str:
    run = TurnRun(
        turn_id="t-retry-after",
        channel=CHANNEL,
        status="done",
        request={"channel": CHANNEL, "conversation_id": "c1", "content": "hi"},
        rendered=[{"type": "text", "content": "喵"}],
        bot="b",
        deliver=True,
        delivery_status="pending",
    )
    with Session(engine) as s:
        s.add(run)
        s.commit()
    return "t-retry-after"


def test_a_second_run_inside_retry_after_waits_instead_of_sending(engine: Engine) -> None:
    register_destination(CHANNEL, _destination)
    sender = FlakySender(retry_after=30)
    clock = Clock()
    deps = DeliveryDeps(
        engine=engine,
        settings=None,
        delivery=DeliverySettings(rate_limit_enabled=False, max_attempts=3),
        limiter=InMemoryRateLimiter(),
        senders=lambda platform, bot, settings: sender,
        now=clock,
    )
    turn_id = _turn(engine)

    first = deliver_turn(deps, turn_id)
    assert (first.kind, first.delay) == ("retry", 30.0)
    (row,) = outbox.rows_for(engine, turn_id)
    assert (row.status, row.attempts) == ("pending", 1)
    assert row.not_before == clock.now + timedelta(seconds=30)

    clock.now += timedelta(seconds=1)  # e.g. the sweeper or next_in_line runs it again now
    second = deliver_turn(deps, turn_id)
    assert (second.kind, second.delay) == ("retry", 29.0)
    assert "retry time" in second.reason
    assert sender.calls == [0]  # not sent again inside the platform's wait
    (row,) = outbox.rows_for(engine, turn_id)
    assert (row.status, row.attempts) == ("pending", 1)  # no attempt burnt

    clock.now += timedelta(seconds=29)
    assert deliver_turn(deps, turn_id).kind == "done"
    assert sender.calls == [0, 0]
    (row,) = outbox.rows_for(engine, turn_id)
    assert (row.status, row.attempts, row.not_before) == ("sent", 2, None)
