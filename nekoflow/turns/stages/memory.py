"""Stage 4, memory_build: the reply parsed and written into the dialogue tree."""

from __future__ import annotations

import logging

from sqlmodel import Session

from nekoflow.memory import parse_reply
from nekoflow.memory.history import write_turn
from nekoflow.turns import store
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.lines import proactive_marker, request_of, user_lines
from nekoflow.turns.models import (
    DispatchResult,
    LLMCallResult,
    MemoryBuildResult,
)
from nekoflow.turns.stages.common import commit_result, commits_async, display_text, running_turn

log = logging.getLogger(__name__)


def memory_build(deps: TurnDeps, turn_id: str) -> MemoryBuildResult:
    """Parse the reply and write the user line and reply lines into the dialogue tree."""
    with Session(deps.engine) as s:  # read the turn in the transaction that writes the lines
        turn = running_turn(deps, turn_id, "memory_build", s)
        stored = turn.result("memory_build", MemoryBuildResult)
        if stored is not None:
            return stored
        d = turn.required("dispatch", DispatchResult)
        reply = turn.required("llm_call", LLMCallResult)
        segments = parse_reply(reply.text)
        req = request_of(turn.run)
        lines = write_turn(
            s,
            save_id=d.save_id,
            turn_id=turn_id,
            # a proactive turn has no user's message: the character's lines only
            user_lines=[] if proactive_marker(turn.run) else user_lines(req, d),
            reply_segments=segments,
            role_id=d.role_id,
            display_name=d.role_name,
            now=d.sent_at,
        )
        result = MemoryBuildResult(
            line_ids=[line.id for line in lines if line.id is not None],
            segments=[seg.model_dump() for seg in segments],
            reply_text=display_text(segments),
        )
        ok = store.put_stage(
            s,
            turn_id,
            "memory_build",
            result.model_dump(mode="json"),
            async_commit=commits_async(deps),
        )
        return commit_result(s, deps, turn_id, "memory_build", result, stored=ok)
