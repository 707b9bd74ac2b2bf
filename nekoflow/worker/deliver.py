"""The ``outbound`` queue's tasks: ``nekoflow.turn.deliver`` (send a finished turn's reply) and
``nekoflow.turn.typing`` (the platform's typing indicator while the turn runs).

Arguments are ``(turn_id, scope_id)`` only, like the six stages: Flower shows ids, never text.
The stage tasks call :func:`after_stage`: when ``dispatch`` starts a turn the typing indicator is
published, and when a turn ends (``apply_deltas`` done, or failed at any stage) waiters are
notified and the deliver task is published — after the scope's next turn was handed off, so a
slow platform never holds up the conversation.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from celery import Task
from celery.utils.log import get_task_logger

from nekoflow.delivery import outbox
from nekoflow.delivery.ratelimit import InMemoryRateLimiter
from nekoflow.delivery.tables import DeliveryStatus
from nekoflow.storage.turns import TurnRun
from nekoflow.turns import store
from nekoflow.turns.delivery import (
    DeliveryDeps,
    deliver_turn,
    has_reply,
    next_in_line,
    send_typing,
)
from nekoflow.turns.heartbeat import TurnHeartbeat
from nekoflow.turns.notify import notifier_for
from nekoflow.worker.app import app
from nekoflow.worker.runtime import get_deps

log = get_task_logger(__name__)

QUEUE = "outbound"
_OPEN = (DeliveryStatus.pending.value, DeliveryStatus.sending.value)

_lock = threading.Lock()
_deps: DeliveryDeps | None = None
_deps_key: tuple[int, int] | None = None


def delivery_deps() -> DeliveryDeps:
    """This process's DeliveryDeps: the turn deps' engine and settings, and a rate limiter
    shared through Redis when the broker is Redis (in process otherwise: embedded mode)."""
    global _deps, _deps_key
    turn_deps = get_deps()
    key = (os.getpid(), id(turn_deps))
    with _lock:
        if _deps is None or _deps_key != key:
            settings = turn_deps.settings
            limiter: Any
            if str(settings.broker_url or "").startswith(("redis://", "rediss://")):
                from nekoflow.delivery.ratelimit_redis import RedisRateLimiter
                from nekoflow.redis_client import make_redis

                limiter = RedisRateLimiter(
                    make_redis(settings.redis_url), prefix=settings.redis_prefix
                )
            else:
                limiter = InMemoryRateLimiter()
            _deps = DeliveryDeps(engine=turn_deps.engine, settings=settings, limiter=limiter)
            _deps_key = key
        return _deps


@app.task(
    name="nekoflow.turn.deliver",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=None,  # the runner gives up per chunk (NEKOFLOW_DELIVERY_MAX_ATTEMPTS)
)
def deliver(self: Task, turn_id: str, scope_id: str | None = None) -> dict[str, Any]:
    """Send the turn's reply chunks that are not sent yet (idempotent per chunk)."""
    deps = delivery_deps()
    # a long send keeps the turn fresh: the sweeper re-publishes only a delivery gone quiet
    with TurnHeartbeat(deps.engine, turn_id, lease_seconds=deps.settings.turn_lease_seconds):
        outcome = deliver_turn(deps, turn_id)
    if outcome.kind == "retry":
        raise self.retry(countdown=max(outcome.delay, 0.01))
    if outcome.kind != "waiting":
        nxt = next_in_line(deps, turn_id)
        if nxt is not None:  # the conversation's next reply waited for this one
            publish_delivery(nxt, scope_id)
    return {"turn_id": turn_id, "stage": "deliver", "status": outcome.kind}


@app.task(name="nekoflow.turn.typing", ignore_result=True)
def typing(turn_id: str, scope_id: str | None = None) -> bool:
    """Show the platform's typing indicator for a running turn (best effort)."""
    return send_typing(delivery_deps(), turn_id)


def _publish(task: Task, turn_id: str, scope: str | None) -> None:
    task.apply_async(
        (turn_id, scope),
        queue=QUEUE,
        argsrepr=repr((turn_id, scope)),
        kwargsrepr="{}",
    )


AFTER_TURN: list[Callable[[TurnRun, str | None], None]] = []
"""What runs once a turn has ended, after its delivery is published (the speech task module
adds the voice's synthesis): the worker's modules register here, so this one imports none."""


def publish_delivery(turn_id: str, scope: str | None) -> None:
    """Publish the deliver task of a finished turn."""
    _publish(deliver, turn_id, scope)


def after_stage(
    stage: str, turn_id: str, kind: str, scope: str | None, run: TurnRun | None = None
) -> None:
    """Hook of the stage tasks (never raises): typing after dispatch, notification and
    delivery once the turn has ended. ``run``: the turn's row as read after the stage (after
    dispatch, as dispatch read it; once ended, as it ended), saving a read."""
    try:
        ended = (stage == "apply_deltas" and kind == "ok") or kind == "failed"
        if not ended and not (stage == "dispatch" and kind == "ok"):
            return
        turn_deps = get_deps()
        if run is None or run.turn_id != turn_id:
            run = store.get_run(turn_deps.engine, turn_id)
        if run is None:
            return
        if not ended:
            if run.delivery_status in _OPEN:
                _publish(typing, turn_id, scope)
            return
        notifier = notifier_for(turn_deps.settings)
        if notifier is not None:
            notifier.publish(turn_id, run.status)
        if run.delivery_status in _OPEN:
            publish_delivery(turn_id, scope)
        for hook in AFTER_TURN:  # the reply's voice, on the speech queue (when speech is on)
            hook(run, scope)
    except Exception as exc:  # the sweeper re-publishes a delivery this missed
        log.warning("turn %s: after %s (%s)", turn_id, stage, type(exc).__name__)


def republish_deliveries(now: datetime | None = None) -> list[str]:
    """Publish again the deliveries of finished turns that stopped moving (lost message, dead
    worker): their outbox makes a second run send only what is not sent yet. A turn with no
    reply to send (superseded, skipped without a reply — rows from before their delivery was
    closed at the end) is closed ``not_sent`` instead, quietly. ``now``: the time (tests)."""
    turn_deps = get_deps()
    stalled = outbox.stalled_deliveries(
        turn_deps.engine,
        older_than=timedelta(seconds=turn_deps.settings.turn_lease_seconds),
        now=now,
    )
    published: list[str] = []
    for run in stalled:
        if not has_reply(run):
            outbox.set_delivery(
                turn_deps.engine, run.turn_id, DeliveryStatus.not_sent.value, run.status
            )
            continue
        publish_delivery(run.turn_id, None)
        outbox.set_delivery(turn_deps.engine, run.turn_id, run.delivery_status, None)
        published.append(run.turn_id)
    return published


def after_stage_task(
    task: Task, stage: str, turn_id: str, kind: str, run: TurnRun | None = None
) -> None:
    """:func:`after_stage` with the scope label taken from the stage task's own arguments."""
    args = list(task.request.args or [])
    after_stage(stage, turn_id, kind, args[1] if len(args) > 1 else None, run)
