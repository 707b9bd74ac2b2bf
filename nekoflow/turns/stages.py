"""The six stages of a turn as plain Python, keyed on turn_id and idempotent.

Each stage reads what it needs from the database, stores its result in ``turn_stage`` and
returns it; called again for the same turn (a redelivered or retried task) it returns the stored
result without redoing the work. ``memory_build`` and ``apply_deltas`` write their effects in the
same transaction as their stored result, and ``apply_deltas`` also inserts the turn's
``DeltaLedger`` row, so a turn's deltas are applied exactly once.

Celery lives elsewhere (``tasks/``): these functions take a :class:`TurnDeps` and a turn id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, or_, select

from nekoflow.channels import ChannelRuntimeContext, ChatRequest
from nekoflow.events import Event
from nekoflow.memory import build_memory, parse_reply
from nekoflow.memory.history import get_or_create_save, load_history_rows, write_turn
from nekoflow.memory.reply import ReplySegment, visible_text
from nekoflow.review.models import RELATIONSHIP_DIMENSIONS, ReviewInput, ReviewOutput
from nekoflow.review.timegap import real_time_context
from nekoflow.storage import read_session
from nekoflow.storage.dialogue import Line, Role, utcnow
from nekoflow.storage.turns import (
    FINISHED,
    DeltaLedger,
    MemoryRecord,
    Relationship,
    TurnRun,
    TurnStatus,
    WorldBookSuggestion,
)
from nekoflow.turns import store
from nekoflow.turns.books import BookCache
from nekoflow.turns.characters import clamp_dimension, initial_relationship, resolve_role
from nekoflow.turns.clock import message_time
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.effects import memory_rows, plot_rows
from nekoflow.turns.errors import TurnFailed, TurnNotRunnable
from nekoflow.turns.models import (
    ApplyResult,
    BeforeTurnResult,
    DispatchResult,
    InjectedEntry,
    LLMCallResult,
    MemoryBuildResult,
)
from nekoflow.turns.prompting import build_system_prompt, memories_text
from nekoflow.worldbook import WorldBookRecallContext, injected_entries, match_entries_v2

log = logging.getLogger(__name__)

R = TypeVar("R", bound=BaseModel)


_book_caches: dict[int, BookCache] = {}


# --- helpers -----------------------------------------------------------------------------


@dataclass
class _Turn:
    """A turn as a stage sees it: its run row and the results of the stages done so far,
    read once at the start of the stage."""

    run: TurnRun
    results: dict[str, dict[str, Any]]

    def result(self, stage: str, model: type[R]) -> R | None:
        """The stored result of ``stage``, or None when it has not completed."""
        data = self.results.get(stage)
        return None if data is None else model.model_validate(data)

    def required(self, stage: str, model: type[R]) -> R:
        """The stored result of an earlier ``stage``, which must have completed."""
        result = self.result(stage, model)
        if result is None:
            raise TurnNotRunnable(f"turn {self.run.turn_id}: stage {stage} has not completed")
        return result


def _load(deps: TurnDeps, turn_id: str) -> _Turn:
    run, results = store.load_turn(deps.engine, turn_id)
    if run is None:
        raise TurnNotRunnable(f"no turn {turn_id!r}")
    return _Turn(run, results)


def _running(deps: TurnDeps, turn_id: str, stage: str) -> _Turn:
    """The turn, which must have been claimed (running) for ``stage`` to proceed."""
    turn = _load(deps, turn_id)
    if turn.run.status != TurnStatus.running:
        raise TurnNotRunnable(f"turn {turn_id} is {turn.run.status}; {stage} does not run")
    return turn


def _stored(deps: TurnDeps, turn_id: str, stage: str, model: type[R]) -> R | None:
    with read_session(deps.engine) as s:
        data = store.get_stage(s, turn_id, stage)
    return None if data is None else model.model_validate(data)


def _required(deps: TurnDeps, turn_id: str, stage: str, model: type[R]) -> R:
    result = _stored(deps, turn_id, stage, model)
    if result is None:
        raise TurnNotRunnable(f"turn {turn_id}: stage {stage} has not completed")
    return result


def _commit_result(
    s: Session, deps: TurnDeps, turn_id: str, stage: str, result: R, *, stored: bool = True
) -> R:
    """Commit ``s`` with the stage's result; if a concurrent run of the stage stored one first
    (``stored`` False, or a conflict at commit), roll back and use theirs.

    Intermediate results may commit asynchronously (``database_async_stage_commits``): losing
    one to a database crash only means the stage runs again.
    """
    if not stored:
        s.rollback()
        return _required(deps, turn_id, stage, type(result))
    if deps.settings.database_async_stage_commits and s.get_bind().dialect.name == "postgresql":
        s.execute(store.ASYNC_COMMIT)
    try:
        s.commit()
        return result
    except IntegrityError:
        s.rollback()
        return _required(deps, turn_id, stage, type(result))


def _save_result(deps: TurnDeps, turn_id: str, stage: str, result: R, **run_fields: Any) -> R:
    """Store a computed result (and progress on the TurnRun) in one transaction."""
    with Session(deps.engine) as s:
        ok = store.put_stage(s, turn_id, stage, result.model_dump(mode="json"), **run_fields)
        return _commit_result(s, deps, turn_id, stage, result, stored=ok)


def _request(run: TurnRun) -> ChatRequest:
    return ChatRequest.model_validate(run.request)


def _context(run: TurnRun) -> ChannelRuntimeContext:
    return ChannelRuntimeContext.model_validate(run.context)


def user_text(req: ChatRequest) -> str:
    """What the user said, with a placeholder per attachment when there is no text."""
    if req.content.strip():
        return req.content
    kinds = [getattr(a, "type", "file") or "file" for a in req.attachments]
    return "".join(f"[{kind}]" for kind in kinds) or "…"


def display_text(segments: list[ReplySegment]) -> str:
    """The reply as users see it: each segment's content and (action); no emotion, no tts."""
    return visible_text((seg.content, seg.action) for seg in segments)


def _user_line(req: ChatRequest, dispatch: DispatchResult) -> dict[str, Any]:
    name = req.sender.display_name if req.sender else ""
    return {"content": user_text(req), "display_name": name or dispatch.display_name or None}


# --- stage 1: dispatch --------------------------------------------------------------------


def dispatch(deps: TurnDeps, turn_id: str) -> DispatchResult:
    """Claim the turn (per-scope order) and settle who answers: role, save, time gap."""
    try:
        claimed, run = store.claim_run(deps.engine, turn_id)
    except LookupError:  # a message for a turn this database never had: drop it
        raise TurnNotRunnable(f"no turn {turn_id!r}") from None
    if claimed == "finished":
        raise TurnNotRunnable(f"turn {turn_id} already finished")
    if claimed == "blocked":
        raise TurnNotRunnable(f"turn {turn_id} waits for an earlier turn of its scope")
    # A turn claimed just now has never run; a redelivered one may have a stored result.
    turn = _Turn(run, {}) if claimed == "claimed" else _load(deps, turn_id)
    stored = turn.result("dispatch", DispatchResult)
    if stored is not None:
        return stored
    run = turn.run
    assert run.scope_id is not None
    req = _request(run)
    ctx = _context(run)
    with Session(deps.engine) as s:
        role = resolve_role(s, run.character_id)
        if role is None or role.id is None:
            wanted = f" {run.character_id!r}" if run.character_id else ""
            raise TurnFailed(
                f"no character{wanted}: add one with `nekoflow character add` or set "
                "default_character_id in config.ini"
            )
        save = get_or_create_save(s, role_id=role.id, scope_id=run.scope_id)
        previous = None
        if save.last_message_id is not None:
            leaf = s.get(Line, save.last_message_id)
            previous = leaf.created_at if leaf is not None else None
        sent_at = message_time(req.metadata, run.created_at)
        result = DispatchResult(
            role_id=role.id,
            role_name=role.name,
            save_id=save.id or 0,
            scope_id=run.scope_id,
            user_id=req.user_id or ctx.user_id,
            group_id=req.group_id or ctx.group_id,
            display_name=req.sender.display_name if req.sender else "",
            sent_at=sent_at,
            real_time=real_time_context(previous, sent_at).to_dict(),
        )
        ok = store.put_stage(
            s,
            turn_id,
            "dispatch",
            result.model_dump(mode="json"),
            role_id=result.role_id,
            save_id=result.save_id,
        )
        return _commit_result(s, deps, turn_id, "dispatch", result, stored=ok)


# --- stage 2: before_turn -----------------------------------------------------------------


def _relationship(s: Session, role: Role, scope_id: str) -> dict[str, int]:
    row = s.get(Relationship, (role.id, scope_id))
    if row is None:
        return initial_relationship(role)
    return {d: getattr(row, d) for d in RELATIONSHIP_DIMENSIONS}


def _memories(s: Session, role_id: int, scope_id: str, limit: int = 50) -> list[MemoryRecord]:
    now = utcnow()
    return list(
        s.exec(
            select(MemoryRecord)
            .where(
                MemoryRecord.role_id == role_id,
                MemoryRecord.scope_id == scope_id,
                or_(col(MemoryRecord.expires_at).is_(None), col(MemoryRecord.expires_at) > now),
            )
            .order_by(col(MemoryRecord.importance).desc(), col(MemoryRecord.created_at).desc())
            .limit(limit)
        ).all()
    )


def _history_messages(deps: TurnDeps, s: Session, d: DispatchResult, turn_id: str) -> list[dict]:
    rows = load_history_rows(s, d.save_id, limit=deps.settings.history_limit)
    rows = [r for r in rows if getattr(r, "turn_id", None) != turn_id]
    return build_memory(rows, role_id=d.role_id)


def books_for(deps: TurnDeps) -> BookCache:
    """The process's world-book cache for this engine."""
    key = id(deps.engine)
    if key not in _book_caches:
        _book_caches[key] = BookCache(deps.engine)
    return _book_caches[key]


def before_turn(deps: TurnDeps, turn_id: str) -> BeforeTurnResult:
    """World-book recall (with cooldowns) and the system prompt."""
    turn = _running(deps, turn_id, "before_turn")
    stored = turn.result("before_turn", BeforeTurnResult)
    if stored is not None:
        return stored
    d = turn.required("dispatch", DispatchResult)
    req = _request(turn.run)
    scene = req.metadata.get("scene") if isinstance(req.metadata.get("scene"), dict) else {}
    with read_session(deps.engine) as s:
        role = s.get(Role, d.role_id)
        if role is None:
            raise TurnFailed(f"character {d.role_id} was deleted")
        messages = _history_messages(deps, s, d, turn_id)
        relationship = _relationship(s, role, d.scope_id)
        memories = _memories(s, d.role_id, d.scope_id)
    recall = WorldBookRecallContext(
        latest_user_message=req.content,
        recent_messages=messages,
        scene=scene,
        character_id=d.role_name,
        target_id=d.user_id,
        scope_id=d.scope_id,
    )
    results = match_entries_v2(
        recall,
        books_for(deps).books(),
        character_id=str(d.role_id),
        config=deps.recall_config,
        cooldowns=deps.cooldowns.snapshot(d.scope_id),
    )
    memory_block, n_memories = memories_text(
        [(m.title, m.content) for m in memories], deps.settings.memory_prompt_chars
    )
    prompt = build_system_prompt(
        role_name=role.name,
        profile=role.profile_prompt,
        scene=scene,
        real_time_label=d.real_time.get("elapsed_label"),
        continuity=d.real_time.get("continuity_level"),
        relationship=relationship,
        memories=memory_block,
        world_book=[r.entry for r in results],
        world_book_chars=deps.recall_config.max_total_chars,
    )
    # Only entries whose sections reached the prompt count as injected (and cool down).
    reached = {e.id for e in injected_entries(results, deps.recall_config.max_total_chars)}
    result = BeforeTurnResult(
        system_prompt=prompt,
        injected=[
            InjectedEntry(
                id=r.entry.id,
                name=r.entry.name,
                sources=r.trigger_sources,
                keywords=r.matched_keywords,
                score=r.score,
            )
            for r in results
            if r.entry.id in reached
        ],
        memories=n_memories,
        relationship=relationship,
    )
    return _save_result(deps, turn_id, "before_turn", result)


# --- stage 3: llm_call --------------------------------------------------------------------


def llm_messages(deps: TurnDeps, turn_id: str) -> list[dict[str, str]]:
    """System prompt + the dialogue history as messages + this turn's user message."""
    return _llm_messages(deps, _load(deps, turn_id))


def _llm_messages(deps: TurnDeps, turn: _Turn) -> list[dict[str, str]]:
    d = turn.required("dispatch", DispatchResult)
    b = turn.required("before_turn", BeforeTurnResult)
    with read_session(deps.engine) as s:
        history = _history_messages(deps, s, d, turn.run.turn_id)
    return [
        {"role": "system", "content": b.system_prompt},
        *history,
        {"role": "user", "content": user_text(_request(turn.run))},
    ]


def llm_call(deps: TurnDeps, turn_id: str) -> LLMCallResult:
    """Ask the chat model once; a stored success is never asked again.

    Raises :class:`nekoflow.llm.LLMError` on failure (the caller retries retryable ones).
    """
    turn = _running(deps, turn_id, "llm_call")
    stored = turn.result("llm_call", LLMCallResult)
    if stored is not None:
        return stored
    messages = _llm_messages(deps, turn)
    attempts = turn.run.llm_attempts + 1
    # Counts the attempt and refreshes the lease before a call that may take a while.
    store.touch(
        deps.engine,
        turn_id,
        "llm_call",
        async_commit=deps.settings.database_async_stage_commits,
        llm_attempts=attempts,
    )
    reply = deps.chat_model.complete(  # LLMError propagates: the task layer retries or fails
        messages,
        temperature=deps.settings.llm_temperature,
        max_tokens=deps.settings.llm_max_tokens,
    )
    result = LLMCallResult(
        text=reply.text,
        model=reply.model or getattr(deps.chat_model, "name", ""),
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        latency_ms=reply.latency_ms,
        finish_reason=reply.finish_reason,
        attempts=attempts,
    )
    return _save_result(
        deps,
        turn_id,
        "llm_call",
        result,
        llm_model=result.model,
        llm_latency_ms=result.latency_ms,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
    )


# --- stage 4: memory_build ----------------------------------------------------------------


def memory_build(deps: TurnDeps, turn_id: str) -> MemoryBuildResult:
    """Parse the reply and write the user line and reply lines into the dialogue tree."""
    turn = _running(deps, turn_id, "memory_build")
    stored = turn.result("memory_build", MemoryBuildResult)
    if stored is not None:
        return stored
    d = turn.required("dispatch", DispatchResult)
    reply = turn.required("llm_call", LLMCallResult)
    segments = parse_reply(reply.text)
    req = _request(turn.run)
    with Session(deps.engine) as s:
        lines = write_turn(
            s,
            save_id=d.save_id,
            turn_id=turn_id,
            user_lines=[_user_line(req, d)],
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
        ok = store.put_stage(s, turn_id, "memory_build", result.model_dump(mode="json"))
        return _commit_result(s, deps, turn_id, "memory_build", result, stored=ok)


# --- stage 5: review ----------------------------------------------------------------------


def review_input(deps: TurnDeps, turn_id: str) -> ReviewInput:
    """The ReviewInput of this turn, as the review stage builds it."""
    return _review_input(_load(deps, turn_id))


def _review_input(turn: _Turn) -> ReviewInput:
    run, turn_id = turn.run, turn.run.turn_id
    d = turn.required("dispatch", DispatchResult)
    b = turn.required("before_turn", BeforeTurnResult)
    m = turn.required("memory_build", MemoryBuildResult)
    req = _request(run)
    choice = req.metadata.get("choice") if isinstance(req.metadata.get("choice"), dict) else None
    fields: dict[str, Any] = {
        "conversation_id": d.scope_id,
        "character_id": str(d.role_id),
        "user_id": d.user_id,
        "group_id": d.group_id or None,
        "user_message": user_text(req),
        "assistant_message": m.reply_text,
        "selected_choice": choice,
        "relationship_state": b.relationship,
        "real_time_context": d.real_time,
        "turn_context": {"turn_id": turn_id, "channel": run.channel},
    }
    try:
        return ReviewInput.model_validate(fields)
    except ValidationError as exc:
        # A malformed choice from the platform must not sink the turn: review without it.
        log.warning("turn %s: ignoring invalid plot choice: %s", turn_id, exc.errors()[0]["msg"])
        fields["selected_choice"] = None
        return ReviewInput.model_validate(fields)


def review(deps: TurnDeps, turn_id: str) -> ReviewOutput:
    """Run the review pipeline (rule or llm mode, with its events) on this turn."""
    turn = _running(deps, turn_id, "review")
    stored = turn.result("review", ReviewOutput)
    if stored is not None:
        return stored
    output = deps.review.run(_review_input(turn))
    return _save_result(deps, turn_id, "review", output)


# --- stage 6: apply_deltas ----------------------------------------------------------------


def _apply(
    deps: TurnDeps, s: Session, turn_id: str, d: DispatchResult, out: ReviewOutput
) -> ApplyResult:
    rel = s.get(Relationship, (d.role_id, d.scope_id), with_for_update=True)
    if rel is None:
        role = s.get(Role, d.role_id)
        start = initial_relationship(role) if role is not None else {}
        rel = Relationship(role_id=d.role_id, scope_id=d.scope_id, **start)
    delta = out.relationship_delta
    if delta is not None:
        for dim in RELATIONSHIP_DIMENSIONS:
            setattr(rel, dim, clamp_dimension(getattr(rel, dim) + getattr(delta, dim)))
    rel.turns += 1
    rel.updated_at = utcnow()
    s.add(rel)
    now = utcnow()
    memories = memory_rows(
        out, role_id=d.role_id, scope_id=d.scope_id, turn_id=turn_id, at=now, settings=deps.settings
    )
    plots = plot_rows(out, role_id=d.role_id, scope_id=d.scope_id, turn_id=turn_id, at=now)
    s.add_all([*memories, *plots])
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
        relationship={dim: getattr(rel, dim) for dim in RELATIONSHIP_DIMENSIONS},
        memories=len(memories),
        plot_nodes=len(plots),
        world_book_suggestions=suggestions,
    )


def render(deps: TurnDeps, run: TurnRun, text: str) -> list[dict[str, Any]]:
    """The adapter's outbound messages for ``text`` (never the prompt)."""
    return deps.adapter(run.channel).render_result({"text": text}, _context(run))


def apply_deltas(deps: TurnDeps, turn_id: str) -> ApplyResult:
    """In one transaction: ledger row, relationship, memories, plot node, world-book
    suggestion, TurnRun done with the rendered reply. Cooldowns are recorded (idempotently,
    keyed on turn_id) just before the commit. Then the scope's next turn is started."""
    turn = _load(deps, turn_id)
    run = turn.run
    if run.status == TurnStatus.done:
        handoff(deps, run)
        return turn.result("apply_deltas", ApplyResult) or ApplyResult(applied=False)
    if run.status != TurnStatus.running:
        raise TurnNotRunnable(f"turn {turn_id} is {run.status}; apply_deltas does not run")
    d = turn.required("dispatch", DispatchResult)
    b = turn.required("before_turn", BeforeTurnResult)
    m = turn.required("memory_build", MemoryBuildResult)
    out = turn.required("review", ReviewOutput)
    rendered = render(deps, run, m.reply_text)
    now = utcnow()
    done = {"status": TurnStatus.done.value, "finished_at": now, "rendered": rendered}
    with Session(deps.engine) as s:
        try:
            s.add(DeltaLedger(turn_id=turn_id))
            s.flush()  # the ledger's primary key: a concurrent apply of this turn fails here
            result = _apply(deps, s, turn_id, d, out)
            store.put_stage(s, turn_id, "apply_deltas", result.model_dump(mode="json"), **done)
            # Idempotent per turn_id, so a rollback below followed by a retry counts once.
            deps.cooldowns.record(d.scope_id, turn_id, [e.id for e in b.injected])
            s.commit()
        except IntegrityError:
            s.rollback()  # applied by a concurrent delivery: its result stands
            result = _stored(deps, turn_id, "apply_deltas", ApplyResult) or ApplyResult(
                applied=False
            )
            store.finish(deps.engine, turn_id, TurnStatus.done, rendered=rendered)
    announce(deps, run, TurnStatus.done)
    handoff(deps, run)
    return result


# --- failure and hand-off -----------------------------------------------------------------


def fail_turn(deps: TurnDeps, turn_id: str, reason: str) -> None:
    """End a turn as failed: keep the user line, apply nothing, render the failure reply,
    and let the scope move on."""
    run = store.get_run(deps.engine, turn_id)
    if run is None or run.status in FINISHED:
        return
    d = _stored(deps, turn_id, "dispatch", DispatchResult)
    if d is not None:
        try:
            with Session(deps.engine) as s:
                write_turn(
                    s,
                    save_id=d.save_id,
                    turn_id=turn_id,
                    user_lines=[_user_line(_request(run), d)],
                    reply_segments=[],
                    role_id=d.role_id,
                    display_name=d.role_name,
                    now=d.sent_at,
                )
                s.commit()
        except Exception:  # keeping the line is best effort; failing the turn is not
            log.exception("turn %s: could not keep the user line", turn_id)
    try:
        rendered = render(deps, run, deps.settings.failure_reply)
    except Exception:
        log.exception("turn %s: could not render the failure reply", turn_id)
        rendered = [{"type": "text", "content": deps.settings.failure_reply}]
    store.finish(deps.engine, turn_id, TurnStatus.failed, reason=reason[:2000], rendered=rendered)
    announce(deps, run, TurnStatus.failed, reason=reason[:2000])
    handoff(deps, run)


def announce(deps: TurnDeps, run: TurnRun, status: TurnStatus, reason: str | None = None) -> None:
    """Emit ``turn.finished`` (ids, status and reason; never the text) once the turn's end is
    committed, so waiters (the Web API, adapters, benchmarks) need not poll the database."""
    event = Event(
        type="turn.finished",
        source="nekoflow.turns",
        conversation_id=run.scope_id,
        character_id=str(run.role_id) if run.role_id is not None else run.character_id,
        payload={"turn_id": run.turn_id, "channel": run.channel, "status": status.value}
        | ({"reason": reason} if reason else {}),
    )
    try:
        deps.events.emit(event)
    except Exception:  # observers never break a turn
        log.exception("turn %s: could not emit turn.finished", run.turn_id)


def handoff(deps: TurnDeps, run: TurnRun) -> None:
    """Start the next queued turn of ``run``'s scope, if it is now first in line."""
    if run.scope_id is None:
        return
    nxt = store.next_queued_in_scope(deps.engine, run.scope_id)
    if nxt is not None and store.first_publish(deps.engine, nxt.turn_id):
        deps.publish(nxt)


StageFunc = Callable[[TurnDeps, str], Any]

STAGE_FUNCS: dict[str, StageFunc] = {
    "dispatch": dispatch,
    "before_turn": before_turn,
    "llm_call": llm_call,
    "memory_build": memory_build,
    "review": review,
    "apply_deltas": apply_deltas,
}
"""Stage name → function, in chain order."""
