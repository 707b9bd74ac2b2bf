"""``GET /api/usage``: token usage and cost, grouped (bearer token required: it names scopes)."""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel

from nekoflow.api.deps import StateDep, WriteAuth
from nekoflow.api.schemas import ErrorResponse
from nekoflow.usage.store import usage_report

router = APIRouter(prefix="/api/usage", tags=["usage"])


class UsageRow(BaseModel):
    """Calls, tokens and cost of one group (``cost`` None when a model has no price)."""

    group: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    #: calls whose server reported no usage: their tokens are estimated
    estimated_calls: int = 0
    cost: float | None = None
    unpriced: list[str] = []


_AUTH: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorResponse, "description": "Missing or wrong bearer token"},
    503: {"model": ErrorResponse, "description": "NEKOFLOW_API_TOKEN not configured"},
}


@router.get(
    "",
    response_model=list[UsageRow],
    dependencies=[WriteAuth],
    responses=_AUTH,
    summary="Token usage",
)
def get_usage(
    state: StateDep,
    by: Literal["day", "channel", "character", "scope", "model", "kind"] = "day",
    since: date | None = Query(default=None, description="First UTC day"),
    until: date | None = Query(default=None, description="Last UTC day"),
) -> list[UsageRow]:
    """Usage as the LLM servers reported it (replies, LLM reviews, re-reviews), with its cost."""
    rows: list[dict[str, Any]] = usage_report(
        state.engine, by=by, since=since, until=until, prices=state.settings.llm_prices
    )
    return [UsageRow(group=row.pop(by), **row) for row in rows]
