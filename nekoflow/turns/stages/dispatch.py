"""Stage 1, dispatch: claim the turn in its scope's order and settle who answers."""

from __future__ import annotations

import logging
from datetime import datetime

from nekoflow.memory.history import save_id_for
from nekoflow.review.timegap import real_time_context
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.fastsql import Bind
from nekoflow.turns import flow_store, store
from nekoflow.turns.characters import character_and_save
from nekoflow.turns.clock import message_time
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.errors import (
    StageBusy,
    TurnFailed,
    TurnNotRunnable,
    TurnSkipped,
)
from nekoflow.turns.lines import context_of, request_of
from nekoflow.turns.models import DispatchResult
from nekoflow.turns.stages.common import StageTurn, commit_result, commits_async, load_stage_turn

log = logging.getLogger(__name__)


def dispatch(deps: TurnDeps, turn_id: str) -> DispatchResult:
    """Claim the turn (per-scope order) and settle who answers: role, save, time gap.

    One transaction: the claim commits with the result (a failure before rolls it back).
    Core statements only, so a plain Connection rather than a Session (cheaper per stage).
    """
    with deps.engine.connect() as s:
        try:
            claimed, run = store.claim_run_in(s, turn_id)
        except LookupError:  # a message for a turn this database never had: drop it
            raise TurnNotRunnable(f"no turn {turn_id!r}") from None
        if claimed == "finished":
            raise TurnNotRunnable(f"turn {turn_id} already finished")
        if claimed == "blocked":
            raise TurnNotRunnable(f"turn {turn_id} waits for an earlier turn of its scope")
        if claimed == "waiting":  # on_busy = merge: more messages may still join this turn
            assert run.not_before is not None
            wait = (run.not_before - utcnow()).total_seconds()
            raise StageBusy("merge debounce window open", wait_seconds=wait)
        # A turn claimed just now has never run; a redelivered one may have a stored result.
        turn = StageTurn(run, {}) if claimed == "claimed" else load_stage_turn(deps, turn_id, s)
        stored = turn.result("dispatch", DispatchResult)
        if stored is not None:
            return stored
        return _dispatch(deps, s, turn)


def _dispatch(deps: TurnDeps, s: Bind, turn: StageTurn) -> DispatchResult:
    """Decide the dispatch result of a running ``turn`` and store it, committing ``s``."""
    run, turn_id = turn.run, turn.run.turn_id
    assert run.scope_id is not None
    req = request_of(run)
    ctx = context_of(run)
    found = character_and_save(s, run.character_id, run.scope_id)
    if found is None:
        wanted = f" {run.character_id!r}" if run.character_id else ""
        raise TurnFailed(
            f"no character{wanted}: add one with `nekoflow character add` or set "
            "default_character_id in config.ini"
        )
    role_id, role_name, save_id, previous = found
    if save_id is None:  # the character's first turn in this scope
        save_id = save_id_for(s, role_id, run.scope_id)
    sent_at = message_time(req.metadata, run.created_at)
    merged = [
        {"request": m, "sent_at": message_time(m.get("metadata") or {}, at).isoformat()}
        for m, at in flow_store.merged_requests(deps.engine, turn_id, s)
    ]
    latest = max([sent_at, *(datetime.fromisoformat(m["sent_at"]) for m in merged)])
    policy = deps.flow.for_channel(run.channel)
    if policy.is_stale(latest.timestamp(), utcnow().timestamp()):
        raise TurnSkipped("stale")
    result = DispatchResult(
        role_id=role_id,
        role_name=role_name,
        save_id=save_id,
        scope_id=run.scope_id,
        user_id=req.user_id or ctx.user_id,
        group_id=req.group_id or ctx.group_id,
        display_name=req.sender.display_name if req.sender else "",
        sent_at=sent_at,
        real_time=real_time_context(previous, sent_at).to_dict(),
        merged=merged,
    )
    ok = store.put_stage(
        s,
        turn_id,
        "dispatch",
        result.model_dump(mode="json"),
        async_commit=commits_async(deps),
        role_id=result.role_id,
        save_id=result.save_id,
    )
    return commit_result(s, deps, turn_id, "dispatch", result, stored=ok)
