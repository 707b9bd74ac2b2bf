"""Stage 5, review: the review pipeline on the turn's input."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError
from sqlmodel import col, select

from nekoflow.review.models import ReviewInput, ReviewOutput
from nekoflow.storage import read_session
from nekoflow.storage.fastsql import Bind
from nekoflow.storage.turns import MemoryRecord
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.errors import StageBusy, TurnNotRunnable
from nekoflow.turns.lines import request_of, turn_user_text
from nekoflow.turns.llm_lease import LeaseHeartbeat, claim_review_call_in, release_llm_lease
from nekoflow.turns.models import (
    BeforeTurnResult,
    DispatchResult,
    MemoryBuildResult,
)
from nekoflow.turns.stages.common import StageTurn, load_stage_turn, running_turn, save_result
from nekoflow.turns.usage import TurnUsage
from nekoflow.usage.meter import UsageEntry, metered

log = logging.getLogger(__name__)


def review_input(deps: TurnDeps, turn_id: str) -> ReviewInput:
    """The ReviewInput of this turn, as the review stage builds it."""
    turn = load_stage_turn(deps, turn_id)
    return _review_input(turn, _shown_memories(deps, turn))


def _shown_memories(deps: TurnDeps, turn: StageTurn) -> list[dict[str, Any]]:
    """The live facts that went into this turn's prompt, for an LLM review to consolidate
    against (none in rule mode: the rules look memories up themselves)."""
    if getattr(deps.review, "mode", "rule") != "llm":
        return []
    b = turn.required("before_turn", BeforeTurnResult)
    ids = [
        r["id"] for r in b.memory_refs if r.get("kind") == "fact" and isinstance(r.get("id"), int)
    ]
    if not ids:
        return []
    with read_session(deps.engine) as s:
        rows = s.exec(
            select(MemoryRecord.id, MemoryRecord.title, MemoryRecord.content).where(
                col(MemoryRecord.id).in_(ids), col(MemoryRecord.superseded_by).is_(None)
            )
        ).all()
    by_id = {i: {"id": i, "title": t, "content": c} for i, t, c in rows}
    return [by_id[i] for i in ids if i in by_id]


def _review_input(turn: StageTurn, memories: list[dict[str, Any]] | None = None) -> ReviewInput:
    run, turn_id = turn.run, turn.run.turn_id
    d = turn.required("dispatch", DispatchResult)
    b = turn.required("before_turn", BeforeTurnResult)
    m = turn.required("memory_build", MemoryBuildResult)
    req = request_of(run)
    choice = req.metadata.get("choice") if isinstance(req.metadata.get("choice"), dict) else None
    fields: dict[str, Any] = {
        "conversation_id": d.scope_id,
        "character_id": str(d.role_id),
        "user_id": d.user_id,
        "group_id": d.group_id or None,
        "user_message": turn_user_text(req, d),
        "assistant_message": m.reply_text,
        "selected_choice": choice,
        "relationship_state": b.relationship,
        "real_time_context": d.real_time,
        "turn_context": {"turn_id": turn_id, "channel": run.channel},
        "memories": memories or [],
    }
    try:
        return ReviewInput.model_validate(fields)
    except ValidationError as exc:
        # A malformed choice from the platform must not sink the turn: review without it.
        log.warning("turn %s: ignoring invalid plot choice: %s", turn_id, exc.errors()[0]["msg"])
        fields["selected_choice"] = None
        return ReviewInput.model_validate(fields)


def review(deps: TurnDeps, turn_id: str) -> ReviewOutput:
    """Run the review pipeline (rule or llm mode, with its events) on this turn. The rules
    run in the transaction that reads the turn and stores the result; a model's review is
    not waited for with a transaction open, and holds the turn's model-call lease."""
    if getattr(deps.review, "mode", "rule") == "llm":
        return _llm_review(deps, turn_id)
    with deps.engine.connect() as s:  # Core statements only: no Session needed
        turn = running_turn(deps, turn_id, "review", s)
        stored = turn.result("review", ReviewOutput)
        if stored is not None:
            return stored
        with metered() as calls:  # the rules: no lease (and no model call to pay for)
            output = deps.review.run(_review_input(turn))  # rule mode is shown no memories
        return _keep(deps, turn, output, calls, s)


def _llm_review(deps: TurnDeps, turn_id: str) -> ReviewOutput:
    turn = running_turn(deps, turn_id, "review")
    stored = turn.result("review", ReviewOutput)
    if stored is not None:
        return stored
    inp = _review_input(turn, _shown_memories(deps, turn))
    lease = deps.settings.llm_lease_seconds
    with deps.engine.connect() as conn:
        claim = claim_review_call_in(conn, turn_id, lease_seconds=lease)
        if claim.kind == "stored":  # another chain's review ended after this stage's read
            conn.rollback()  # the claim is undone
            return ReviewOutput.model_validate(claim.stored)
        conn.commit()
    if claim.kind == "busy":
        raise StageBusy(
            "review model call in flight in another chain", wait_seconds=claim.wait_seconds
        )
    if claim.kind != "claimed":
        raise TurnNotRunnable(f"turn {turn_id} is not running; review does not run")
    try:
        with (
            LeaseHeartbeat(deps.engine, turn_id, claim.owner, lease_seconds=lease),
            metered() as calls,  # an LLM review's calls are paid for too: count them
        ):
            output = deps.review.run(inp)
    except BaseException:
        release_llm_lease(deps.engine, turn_id, claim.owner)
        raise
    # Stored and the lease given back in one transaction.
    return _keep(deps, turn, output, calls, None, llm_lease_until=None, llm_lease_owner=None)


def _keep(
    deps: TurnDeps,
    turn: StageTurn,
    output: ReviewOutput,
    calls: list[UsageEntry],
    s: Bind | None,
    **run_fields: Any,
) -> ReviewOutput:
    """Store the review with its usage rows (or take the one another chain stored)."""
    d = turn.required("dispatch", DispatchResult)
    usage = TurnUsage(turn.run, d, "review", calls)
    kept = save_result(
        deps, turn.run.turn_id, "review", output, usage=usage, session=s, **run_fields
    )
    usage.count(deps)
    return kept
