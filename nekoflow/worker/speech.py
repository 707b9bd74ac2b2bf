"""The ``speech`` queue's task: ``nekoflow.speech.synthesize`` voices a finished turn's reply
off the turn's path (published when ``apply_deltas`` ends, next to the deliver task), then
publishes the turn's delivery again so its voice chunks go out right after its text.

Arguments are ``(turn_id, scope_id)`` only: the text is loaded in the worker.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from celery import Task
from celery.utils.log import get_task_logger

from nekoflow.speech.settings import get_speech_settings
from nekoflow.storage.turns import TurnRun, TurnStatus
from nekoflow.turns.speech_synth import SpeechDeps, prune_cache, stalled_turns, synthesize_turn
from nekoflow.worker.app import app
from nekoflow.worker.deliver import AFTER_TURN, publish_delivery
from nekoflow.worker.runtime import get_deps

log = get_task_logger(__name__)

QUEUE = "speech"

_lock = threading.Lock()
_deps: SpeechDeps | None = None
_deps_key: tuple[int, int] | None = None


def speech_deps() -> SpeechDeps:
    """This process's SpeechDeps (the turn deps' engine and config.ini path)."""
    global _deps, _deps_key
    turn_deps = get_deps()
    key = (os.getpid(), id(turn_deps))
    with _lock:
        if _deps is None or _deps_key != key:
            _deps = SpeechDeps(
                engine=turn_deps.engine,
                config_path=str(turn_deps.settings.runtime_config_path),
                speech=get_speech_settings(),
            )
            _deps_key = key
        return _deps


@app.task(
    name="nekoflow.speech.synthesize",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def synthesize(self: Task, turn_id: str, scope_id: str | None = None) -> dict[str, Any]:
    """Synthesize the turn's voice parts (each once), then publish its delivery."""
    outcome = synthesize_turn(speech_deps(), turn_id)
    if outcome.failed:
        log.warning(
            "turn %s: %d voice part(s) failed: %s",
            turn_id,
            outcome.failed,
            "; ".join(outcome.reasons),
        )
    if outcome.parts:
        publish_delivery(turn_id, scope_id)  # the voice rows wait for this: send them now
    return {"turn_id": turn_id, "stage": "synthesize", "parts": outcome.parts}


def publish_synthesis(turn_id: str, scope: str | None) -> None:
    """Publish the synthesis of a turn's reply on the ``speech`` queue."""
    synthesize.apply_async(
        (turn_id, scope), queue=QUEUE, argsrepr=repr((turn_id, scope)), kwargsrepr="{}"
    )


@app.task(name="nekoflow.speech.sweep", ignore_result=True)
def sweep() -> list[str]:
    """Beat task: publish again the syntheses that stopped moving (a worker killed mid-call),
    and drop the cached clips unused for ``NEKOFLOW_SPEECH_CACHE_DAYS``."""
    if not get_speech_settings().enabled:
        return []
    deps = speech_deps()
    pruned = prune_cache(deps)
    if pruned:
        log.info("speech sweeper dropped %d unused clip(s)", pruned)
    turns = stalled_turns(deps)
    for turn_id in turns:
        publish_synthesis(turn_id, None)
    if turns:
        log.warning("speech sweeper re-published %d synthesis(es): %s", len(turns), turns)
    return turns


def after_turn(run: TurnRun, scope: str | None) -> None:
    """Publish the synthesis of a turn that ended ``done`` when speech is on (never raises)."""
    try:
        if run.status != TurnStatus.done or not get_speech_settings().enabled:
            return
        publish_synthesis(run.turn_id, scope)
    except Exception as exc:  # the delivery records the voice failed after its wait
        log.warning("turn %s: speech not published (%s)", run.turn_id, type(exc).__name__)


AFTER_TURN.append(after_turn)
