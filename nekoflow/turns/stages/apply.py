"""Stage 6, apply_deltas: ledger, relationship, memories, plot node and done, in one transaction."""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import datetime

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from nekoflow.flow.policy import OnBusy
from nekoflow.memory.settings import get_memory_settings
from nekoflow.memory.store import write_memories
from nekoflow.proactive.plan import plan_after_user_turn, plan_reminders
from nekoflow.review.models import ReviewOutput
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.turns import (
    TurnStatus,
    WorldBookSuggestion,
)
from nekoflow.turns import store
from nekoflow.turns.apply_store import lock_and_bump
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.effects import memory_rows, plot_rows
from nekoflow.turns.errors import TurnNotRunnable
from nekoflow.turns.flow_store import newer_turn_exists, supersede_turn
from nekoflow.turns.lines import proactive_marker, render, request_of, turn_user_text
from nekoflow.turns.models import (
    ApplyResult,
    BeforeTurnResult,
    DispatchResult,
    MemoryBuildResult,
)
from nekoflow.turns.stages.common import load_stage_turn, stored_result
from nekoflow.turns.stages.finish import announce, handoff
from nekoflow.turns.sweep import publish_claimed

log = logging.getLogger(__name__)


def _apply(
    deps: TurnDeps,
    s: Session,
    turn_id: str,
    d: DispatchResult,
    b: BeforeTurnResult,
    out: ReviewOutput,
    moved: tuple[dict[str, int], int],
    now: datetime,
) -> ApplyResult:
    relationship, turns = moved
    memories = memory_rows(
        out, role_id=d.role_id, scope_id=d.scope_id, turn_id=turn_id, at=now, settings=deps.settings
    )
    plots = plot_rows(out, role_id=d.role_id, scope_id=d.scope_id, turn_id=turn_id, at=now)
    decided = [(m.op, m.memory_id) for m in out.memory_items] if out.should_write_memory else None
    ops = write_memories(s, memories, now=now, settings=deps.settings, decided=decided)
    s.add_all(plots)
    suggestions = 0
    if out.world_book_update is not None and out.world_book_update.should_update:
        s.add(
            WorldBookSuggestion(
                role_id=d.role_id,
                scope_id=d.scope_id,
                turn_id=turn_id,
                reason=out.world_book_update.reason,
                entry_title=out.world_book_update.entry_title,
                entry_content=out.world_book_update.entry_content,
            )
        )
        suggestions = 1
    return ApplyResult(
        relationship=relationship,
        memories=len(memories),
        memory_ops=asdict(ops),
        plot_nodes=len(plots),
        world_book_suggestions=suggestions,
        summarize=b.history_beyond and turns % get_memory_settings().summary_every_turns == 0,
    )


def apply_deltas(deps: TurnDeps, turn_id: str) -> ApplyResult:
    """In one transaction: ledger row, relationship, memories, plot node, world-book
    suggestion, TurnRun done with the rendered reply. Cooldowns are recorded (idempotently,
    keyed on turn_id) just before the commit. Then the scope's next turn is started."""
    with Session(deps.engine) as s:  # the turn is read in the transaction that applies it
        turn = load_stage_turn(deps, turn_id, s)
        run = turn.run
        if run.status == TurnStatus.done:
            s.rollback()
            handoff(deps, run)
            return turn.result("apply_deltas", ApplyResult) or ApplyResult(applied=False)
        if run.status != TurnStatus.running:
            raise TurnNotRunnable(f"turn {turn_id} is {run.status}; apply_deltas does not run")
        d = turn.required("dispatch", DispatchResult)
        if deps.flow.for_channel(run.channel).on_busy == OnBusy.interrupt:
            # The last point a newer message supersedes this turn: under the scope's lock,
            # held until this transaction commits, so a message written before the commit
            # supersedes the turn (here, or by its enqueuer) and one written after it finds
            # the turn answered.
            store.lock_scope(s, d.scope_id)
            if newer_turn_exists(s, d.scope_id, run.seq):
                s.rollback()
                if supersede_turn(deps.engine, turn_id) is not None:
                    announce(deps, run, TurnStatus.superseded, reason="superseded")
                    handoff(deps, run)
                raise TurnNotRunnable(f"turn {turn_id} was superseded; apply_deltas does not run")
        b = turn.required("before_turn", BeforeTurnResult)
        m = turn.required("memory_build", MemoryBuildResult)
        out = turn.required("review", ReviewOutput)
        rendered = render(deps, run, m.reply_text)
        if b.greeting:  # the card's greeting goes out first, as its own message(s)
            rendered = render(deps, run, b.greeting) + rendered
        done = {"status": TurnStatus.done.value, "finished_at": utcnow(), "rendered": rendered}
        # Lock the turn while it is still running: a concurrent supersede (on_busy = interrupt)
        # either happened first (nothing is applied) or waits for this commit (and then finds
        # the turn done). A turn past apply_deltas is never undone.
        try:
            # The ledger's primary key: a concurrent apply of this turn fails here. The
            # relationship moves in the same statement (PostgreSQL), only for a running turn.
            now = utcnow()
            moved = lock_and_bump(
                s,
                turn_id,
                role_id=d.role_id,
                scope_id=d.scope_id,
                start=b.relationship,
                delta=out.relationship_delta,
                now=now,
            )
            if moved is None:
                s.rollback()
                raise TurnNotRunnable(f"turn {turn_id} was superseded; apply_deltas does not run")
            result = _apply(deps, s, turn_id, d, b, out, moved, now)
            # the user's message ends a silence and starts one: its follow-up, if any, commits
            # with the turn (a proactive turn's next one is chained by the sweep)
            policy = deps.proactive.for_scope(run.channel, d.scope_id)
            if policy.follow_up_after is not None:
                plan_after_user_turn(s, run, policy, last_at=d.sent_at or now)
            if policy.reminders and not proactive_marker(run):
                text = turn_user_text(request_of(run), d)
                plan_reminders(s, run, policy, text=text, said_at=d.sent_at or now)
            store.put_stage(s, turn_id, "apply_deltas", result.model_dump(mode="json"), **done)
            # Idempotent per turn_id, so a rollback below followed by a retry counts once.
            deps.cooldowns.record(
                d.scope_id,
                turn_id,
                [e.id for e in b.injected],
                fresh=[e.id for e in b.injected if "sticky" not in e.sources],
            )
            # The scope's next turn, claimed under the scope's lock in this transaction (no
            # read after the commit); False: the scope has no lock row, hand off after.
            nxt = store.claim_next_in(s, d.scope_id)
            s.commit()
        except IntegrityError:
            s.rollback()  # applied by a concurrent delivery: its result stands
            result = stored_result(deps, turn_id, "apply_deltas", ApplyResult) or ApplyResult(
                applied=False
            )
            store.finish(deps.engine, turn_id, TurnStatus.done, rendered=rendered)
            nxt = False
    announce(deps, run, TurnStatus.done)
    if nxt is False:
        handoff(deps, run)
    elif nxt is not None:
        publish_claimed(deps, nxt)
    run.status = TurnStatus.done.value  # as it now is (the task hooks read it: no second read)
    return result
