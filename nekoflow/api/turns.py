"""``/api/turns``: submit a platform event as a turn, and read a turn's state.

``POST /api/turns`` (bearer token) parses ``{"channel", "event"}`` with the channel's adapter,
stores the TurnRun row and publishes its chain: 202 with the turn id, or 200 ``skipped`` with the
reason (not a chat message, channel disabled, no trigger). An unknown channel or a malformed event
is a 422 naming the field (``event.<path>`` for the event's own fields).

``GET /api/turns/{turn_id}`` needs the bearer token (a turn id leaks through Flower or logs, and
the turn holds the reply and the scope id) unless ``NEKOFLOW_API_PUBLIC_READS`` opens it. It
shows status, stage, reason, the finished stages with their times, the rendered reply and the
model call — never the user's message text.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, status
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.api.deps import ReadAuth, StateDep, WriteAuth
from nekoflow.api.errors import not_found
from nekoflow.api.schemas import (
    ErrorResponse,
    TurnAccepted,
    TurnIdPath,
    TurnIn,
    TurnLlmOut,
    TurnOut,
    TurnStageOut,
)
from nekoflow.api.voice import voice_of_turn
from nekoflow.errors import InputError
from nekoflow.observability.turn_view import turn_inputs
from nekoflow.storage.turns import STAGES, TurnRun, TurnStage, TurnStatus
from nekoflow.turns import store
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.handle import TurnHandle

router = APIRouter(prefix="/api/turns", tags=["turns"])

_E = ErrorResponse
_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    401: {"model": _E, "description": "Missing or wrong bearer token"},
    404: {"model": _E, "description": "Unknown turn"},
    503: {"model": _E, "description": "Reads closed: NEKOFLOW_API_TOKEN not configured"},
}
_SUBMIT: dict[int | str, dict[str, Any]] = {
    200: {"model": TurnAccepted, "description": "Not a turn: skipped, with the reason"},
    401: {"model": _E, "description": "Missing or wrong bearer token"},
    503: {"model": _E, "description": "Token, database or channel configuration missing"},
}


def submit_event(deps: TurnDeps, channel: str, event: Any, *, field_prefix: str) -> TurnHandle:
    """``submit_turn``, with a malformed event's field named from the request body's root."""
    try:
        return submit_turn(deps, channel, event)
    except InputError as exc:
        field = ".".join(p for p in (field_prefix, exc.field or "") if p) or "body"
        raise InputError(str(exc), field=field) from exc


def load_turn(engine: Engine, turn_id: str) -> TurnOut | None:
    """The API view of a turn (None when unknown): its row plus its finished stages in order."""
    with Session(engine) as session:
        run = session.get(TurnRun, turn_id)
        if run is None:
            return None
        rows = session.exec(
            select(TurnStage.stage, TurnStage.created_at).where(col(TurnStage.turn_id) == turn_id)
        ).all()
    inputs = turn_inputs(engine, [turn_id])[turn_id]
    order = {name: i for i, name in enumerate(STAGES)}
    stages = sorted(
        (TurnStageOut(stage=name, at=at) for name, at in rows),
        key=lambda s: (order.get(s.stage, len(order)), s.at),
    )
    return TurnOut(
        turn_id=run.turn_id,
        channel=run.channel,
        scope_id=run.scope_id,
        character_id=run.character_id,
        role_id=run.role_id,
        status=run.status,
        stage=run.stage,
        reason=run.reason,
        stages=stages,
        stage_runs=store.stage_runs(engine, [turn_id])[turn_id],
        publish_pending=run.status == TurnStatus.queued and run.publishes == 0,
        rendered=run.rendered,
        delivery_status=run.delivery_status,
        delivery_reason=run.delivery_reason,
        voice=voice_of_turn(engine, turn_id),
        llm=TurnLlmOut(
            model=run.llm_model,
            latency_ms=run.llm_latency_ms,
            attempts=run.llm_attempts,
            prompt_tokens=run.prompt_tokens,
            completion_tokens=run.completion_tokens,
        ),
        injected=inputs.injected,
        dropped=inputs.dropped,
        memories=inputs.memory_count,
        memory_refs=inputs.memory_refs,
        created_at=run.created_at,
        updated_at=run.updated_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
    )


def ok_json(answer: BaseModel) -> JSONResponse:
    """``answer`` as a 200 response (for routes whose default status is 202)."""
    return JSONResponse(status_code=status.HTTP_200_OK, content=answer.model_dump(mode="json"))


def accepted(handle: TurnHandle) -> TurnAccepted:
    """The submit answer for ``handle`` (a skipped handle carries its reason)."""
    if handle.is_skipped:
        return TurnAccepted(status="skipped", reason=handle.reason, channel=handle.channel)
    run = handle.run()
    return TurnAccepted(
        turn_id=handle.turn_id,
        status=run.status if run is not None else "queued",
        reason=run.reason if run is not None else None,
        channel=handle.channel,
    )


@router.post(
    "",
    response_model=TurnAccepted,
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[WriteAuth],
    responses=_SUBMIT,
    summary="Submit a platform event as a turn",
)
def post_turn(body: TurnIn, state: StateDep) -> Any:
    """202 with the turn id (the chain is published), or 200 ``skipped`` with the reason."""
    handle = submit_event(state.turns(), body.channel, body.event, field_prefix="event")
    answer = accepted(handle)
    if handle.is_skipped:
        return ok_json(answer)
    return answer


@router.get(
    "/{turn_id}",
    response_model=TurnOut,
    dependencies=[ReadAuth],
    responses=_NOT_FOUND,
    summary="A turn's state and reply",
)
def get_turn(turn_id: TurnIdPath, state: StateDep) -> TurnOut:
    """Status, stage, reason, finished stages with times, rendered reply and model call."""
    turn = load_turn(state.engine, turn_id)
    if turn is None:
        raise not_found("turn", turn_id, "turn_id")
    return turn
