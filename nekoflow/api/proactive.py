"""``/api/proactive``: the messages characters will start themselves — list and cancel.

Reminders hold what users asked for, so every endpoint needs the bearer token. Bad input is a
422 naming the field (``state``, ``limit``, ``schedule_id``); a schedule that already fired or
ended cannot be cancelled (409).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel

from nekoflow.api.deps import StateDep, WriteAuth
from nekoflow.api.errors import conflict, not_found
from nekoflow.api.schemas import ErrorResponse
from nekoflow.errors import InputError
from nekoflow.proactive.admin import ScheduleOut, cancel_schedule, list_schedules

router = APIRouter(prefix="/api/proactive", tags=["proactive"], dependencies=[WriteAuth])

_E = ErrorResponse
_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": _E, "description": "Missing or wrong bearer token"},
    503: {"model": _E, "description": "NEKOFLOW_API_TOKEN not configured"},
}
ScheduleIdPath = Annotated[int, Path(ge=1, le=2**31 - 1, description="Schedule id.")]


class SchedulesOut(BaseModel):
    """Proactive schedules, soonest first."""

    schedules: list[ScheduleOut]


@router.get("", response_model=SchedulesOut, responses=_RESPONSES, summary="Proactive schedules")
def list_route(
    state: StateDep,
    scope: Annotated[str | None, Query(description="Only this scope id.")] = None,
    status: Annotated[
        str | None,
        Query(
            alias="state",
            description="due, firing, fired, cancelled, dropped or all (default: due and firing).",
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="At most this many.")] = 200,
) -> SchedulesOut:
    """Follow-ups and reminders, soonest first (the open ones unless ``state`` says)."""
    return SchedulesOut(
        schedules=list_schedules(state.engine, scope=scope, state=status, limit=limit)
    )


@router.post(
    "/{schedule_id}/cancel",
    response_model=ScheduleOut,
    responses=_RESPONSES
    | {
        404: {"model": _E, "description": "Unknown schedule id"},
        409: {"model": _E, "description": "The schedule already fired or ended"},
    },
    summary="Cancel a proactive message",
)
def cancel_route(schedule_id: ScheduleIdPath, state: StateDep) -> ScheduleOut:
    """Cancel a due follow-up or reminder: it will not be sent."""
    try:
        return cancel_schedule(state.engine, schedule_id)
    except LookupError:
        raise not_found("proactive schedule", str(schedule_id), "schedule_id") from None
    except InputError as exc:
        raise conflict(str(exc), field="schedule_id") from None
