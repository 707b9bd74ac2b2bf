"""The six turn stages as Celery tasks, the chain that links them, and ``enqueue_turn``.

Task names are ``nekoflow.turn.<stage>``; ``llm_call`` runs on the ``llm`` queue, the others on
``turns``. Arguments are only ``(turn_id, scope_id)`` — never message text — so Flower shows
which turn, scope and stage ran without showing what anyone said.
"""

from __future__ import annotations

from typing import Any

from celery import Task, chain
from celery.utils.log import get_task_logger

from nekoflow.doctor.probes import record_sweep
from nekoflow.redact import scope_label
from nekoflow.storage.turns import STAGES, TurnRun, TurnStatus
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.handle import TurnHandle
from nekoflow.turns.models import ApplyResult
from nekoflow.turns.runner import Outcome, execute_stage
from nekoflow.turns.stage_store import load_turn
from nekoflow.turns.sweep import sweep as sweep_turns
from nekoflow.worker.app import app
from nekoflow.worker.deliver import after_stage_task, republish_deliveries
from nekoflow.worker.memory import after_apply
from nekoflow.worker.runtime import get_deps, use_publisher

log = get_task_logger(__name__)

QUEUES: dict[str, str] = {stage: "turns" for stage in STAGES} | {"llm_call": "llm"}
"""Which queue each stage runs on."""


class StageFailed(Exception):
    """Raised by a stage task after the turn was ended as failed (Flower shows FAILURE)."""


def _ended(
    turn_id: str, outcome: Outcome
) -> tuple[TurnRun | None, dict[str, dict[str, Any]] | None]:
    """The applied turn's row and what the hooks need of its results: as apply_deltas left
    them, else in one read (None, None when that fails: each hook then reads for itself)."""
    run, result = outcome.run, outcome.result
    if (
        run is not None
        and run.turn_id == turn_id
        and run.status == TurnStatus.done
        and isinstance(result, ApplyResult)
    ):
        return run, {"apply_deltas": result.model_dump(), "dispatch": {"save_id": run.save_id}}
    try:
        return load_turn(get_deps().engine, turn_id)
    except Exception as exc:
        log.warning("turn %s: could not read the applied turn (%s)", turn_id, type(exc).__name__)
        return None, None


def _run(task: Task, stage: str, turn_id: str) -> dict[str, Any]:
    outcome = execute_stage(get_deps(), stage, turn_id, attempt=task.request.retries + 1)
    run, results = (outcome.run if stage == "dispatch" else None), None
    if stage == "apply_deltas" and outcome.kind == "ok":
        run, results = _ended(turn_id, outcome)
    after_stage_task(task, stage, turn_id, outcome.kind, run)  # typing, notification, delivery
    if stage == "apply_deltas" and outcome.kind == "ok":
        after_apply(turn_id, results)  # the history summary, on the memory queue, when due
    if outcome.kind == "ok":
        return {"turn_id": turn_id, "stage": stage, "status": "ok"}
    if outcome.kind == "retry":
        log.warning(
            "turn %s %s: retrying in %.1fs (%s)", turn_id, stage, outcome.delay, outcome.reason
        )
        # The runner decides how many attempts a stage gets (llm_max_attempts,
        # stage_max_attempts); the tasks themselves retry without a Celery-side cap.
        raise task.retry(countdown=outcome.delay)
    task.request.chain = None  # end the chain here
    if outcome.kind == "stop":
        return {"turn_id": turn_id, "stage": stage, "status": "stopped", "reason": outcome.reason}
    raise StageFailed(outcome.reason)


_OPTIONS: dict[str, Any] = {
    "bind": True,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "max_retries": None,  # unlimited here: ``execute_stage`` ends the turn as failed in time
    # Nothing reads a stage task's result (SQL holds the stage results; Flower reads task
    # events): no result-backend writes, no STARTED state — fewer Redis commands per turn.
    "ignore_result": True,
    "track_started": False,
}


@app.task(name="nekoflow.turn.dispatch", **_OPTIONS)
def dispatch(self: Task, turn_id: str, scope_id: str | None = None) -> dict[str, Any]:
    """Claim the turn in its scope's order; settle character, save and time gap."""
    return _run(self, "dispatch", turn_id)


@app.task(name="nekoflow.turn.before_turn", **_OPTIONS)
def before_turn(self: Task, turn_id: str, scope_id: str | None = None) -> dict[str, Any]:
    """World-book recall and the system prompt."""
    return _run(self, "before_turn", turn_id)


@app.task(name="nekoflow.turn.llm_call", **_OPTIONS)
def llm_call(self: Task, turn_id: str, scope_id: str | None = None) -> dict[str, Any]:
    """Call the chat model (retryable failures back off and retry)."""
    return _run(self, "llm_call", turn_id)


@app.task(name="nekoflow.turn.memory_build", **_OPTIONS)
def memory_build(self: Task, turn_id: str, scope_id: str | None = None) -> dict[str, Any]:
    """Write the user line and the reply lines into the dialogue tree."""
    return _run(self, "memory_build", turn_id)


@app.task(name="nekoflow.turn.review", **_OPTIONS)
def review(self: Task, turn_id: str, scope_id: str | None = None) -> dict[str, Any]:
    """Review the turn (rule or LLM mode) and emit the review events."""
    return _run(self, "review", turn_id)


@app.task(name="nekoflow.turn.apply_deltas", **_OPTIONS)
def apply_deltas(self: Task, turn_id: str, scope_id: str | None = None) -> dict[str, Any]:
    """Apply the review's deltas once, finish the turn and start the scope's next one."""
    return _run(self, "apply_deltas", turn_id)


STAGE_TASKS: dict[str, Task] = {
    "dispatch": dispatch,
    "before_turn": before_turn,
    "llm_call": llm_call,
    "memory_build": memory_build,
    "review": review,
    "apply_deltas": apply_deltas,
}


def turn_chain(run: TurnRun) -> chain:
    """The six stages of ``run`` as one Celery chain (immutable signatures).

    The scope id rides along only for monitoring (tasks load everything by turn id); with
    ``NEKOFLOW_MONITORING_SCOPE_IDS=hashed`` it is a keyed hash, so Flower and the result
    backend never see platform user ids.
    """
    scope = scope_label(run.scope_id, key=get_deps().settings.scope_hash_key)
    sigs = []
    for stage in STAGES:
        sig = STAGE_TASKS[stage].si(run.turn_id, scope)
        sig.set(
            queue=QUEUES[stage],
            argsrepr=repr((run.turn_id, scope)),
            kwargsrepr=repr({"stage": stage}),
        )
        sigs.append(sig)
    return chain(*sigs)


def publish_turn(run: TurnRun) -> None:
    """Send ``run``'s chain to the broker."""
    turn_chain(run).apply_async()


use_publisher(publish_turn)  # this process's deps publish turns as this chain


def enqueue_turn(
    channel: str, raw_event: Any, *, bot: str | None = None, deliver: bool = True
) -> TurnHandle:
    """Submit a platform event as a turn: what adapter authors call.

    Parses ``raw_event`` with ``channel``'s adapter, writes the TurnRun row, publishes the chain
    when the turn is first in its scope (otherwise the previous turn starts it when it ends),
    and returns a :class:`TurnHandle`. Non-chat events, disabled channels and messages that do
    not trigger return a handle with status ``skipped`` and the reason.

    ``bot`` names the platform bot that received the event (several bots per platform);
    ``deliver=False`` when the caller sends the reply itself (``handle.wait()`` returns it):
    otherwise a platform with a configured sender gets the reply from the ``outbound`` queue.
    """
    return submit_turn(get_deps(), channel, raw_event, bot=bot, deliver=deliver)


def republish_stuck() -> list[str]:
    """Publish pending turns and re-publish stuck ones (``nekoflow.turns.sweep.sweep``)."""
    return sweep_turns(get_deps())


@app.task(name="nekoflow.sweep", ignore_result=True)
def sweep() -> list[str]:
    """Beat task: re-publish stuck turns so a crashed worker or lost message loses no turn."""
    record_sweep(get_deps().settings)  # for ``nekoflow doctor``: beat is alive
    republished = republish_stuck()
    if republished:
        log.warning("sweeper re-published %d stuck turn(s): %s", len(republished), republished)
    deliveries = republish_deliveries()
    if deliveries:
        log.warning("sweeper re-published %d stalled deliveries: %s", len(deliveries), deliveries)
    return republished + deliveries
