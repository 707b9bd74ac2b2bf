"""What every stage shares: the turn as a stage sees it, storing results, the request's texts."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel
from sqlalchemy.exc import IntegrityError

from nekoflow.memory.builder import build_memory
from nekoflow.memory.reply import ReplySegment, visible_text
from nekoflow.storage import read_session
from nekoflow.storage.fastsql import Bind
from nekoflow.storage.turns import (
    TurnRun,
    TurnStatus,
)
from nekoflow.turns import store
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.errors import TurnNotRunnable
from nekoflow.turns.models import DispatchResult

if TYPE_CHECKING:
    from nekoflow.turns.usage import TurnUsage

log = logging.getLogger(__name__)

R = TypeVar("R", bound=BaseModel)


@dataclass
class StageTurn:
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


def load_stage_turn(deps: TurnDeps, turn_id: str, session: Bind | None = None) -> StageTurn:
    """The turn and its stored results, read in ``session``'s transaction when given."""
    if session is None:
        run, results = store.load_turn(deps.engine, turn_id)
    else:
        run, results = store.load_turn_in(session, turn_id)
    if run is None:
        raise TurnNotRunnable(f"no turn {turn_id!r}")
    return StageTurn(run, results)


def running_turn(
    deps: TurnDeps, turn_id: str, stage: str, session: Bind | None = None
) -> StageTurn:
    """The turn, which must have been claimed (running) for ``stage`` to proceed."""
    turn = load_stage_turn(deps, turn_id, session)
    if turn.run.status != TurnStatus.running:
        raise TurnNotRunnable(f"turn {turn_id} is {turn.run.status}; {stage} does not run")
    return turn


def stored_result(deps: TurnDeps, turn_id: str, stage: str, model: type[R]) -> R | None:
    with read_session(deps.engine) as s:
        data = store.get_stage(s, turn_id, stage)
    return None if data is None else model.model_validate(data)


def _required(deps: TurnDeps, turn_id: str, stage: str, model: type[R]) -> R:
    result = stored_result(deps, turn_id, stage, model)
    if result is None:
        raise TurnNotRunnable(f"turn {turn_id}: stage {stage} has not completed")
    return result


def commits_async(deps: TurnDeps) -> bool:
    """Whether an intermediate result may commit asynchronously (``database_async_stage_commits``,
    PostgreSQL): losing one to a database crash only means the stage runs again."""
    return deps.settings.database_async_stage_commits


def commit_result(
    s: Bind, deps: TurnDeps, turn_id: str, stage: str, result: R, *, stored: bool = True
) -> R:
    """Commit ``s`` with the stage's result (stored by ``put_stage`` with
    :func:`commits_async`); if a concurrent run of the stage stored one first (``stored``
    False, or a conflict at commit), roll back and use theirs."""
    if not stored:
        s.rollback()
        return _required(deps, turn_id, stage, type(result))
    try:
        s.commit()
        return result
    except IntegrityError:
        s.rollback()
        return _required(deps, turn_id, stage, type(result))


def save_result(
    deps: TurnDeps,
    turn_id: str,
    stage: str,
    result: R,
    *,
    also: Callable[[Bind], Any] | None = None,
    usage: TurnUsage | None = None,
    session: Bind | None = None,
    **run_fields: Any,
) -> R:
    """Store a computed result (and progress on the TurnRun) in one transaction — ``session``'s
    when given (the stage read its inputs there); ``usage`` (what the stage paid for) is stored
    in the same statement and ``also`` adds rows that belong with it, both only when this
    result is kept (``usage.added`` says whether it was)."""
    if session is None:
        with deps.engine.connect() as s:  # Core statements only: no Session needed
            return save_result(
                deps, turn_id, stage, result, also=also, usage=usage, session=s, **run_fields
            )
    try:
        ok = store.put_stage(
            session,
            turn_id,
            stage,
            result.model_dump(mode="json"),
            async_commit=commits_async(deps),
            rows=usage.rows() if usage is not None else None,
            **run_fields,
        )
        if ok and also is not None:
            also(session)
    except IntegrityError:  # its rows exist: a concurrent run of the stage stored them
        session.rollback()
        return _required(deps, turn_id, stage, type(result))
    kept = commit_result(session, deps, turn_id, stage, result, stored=ok)
    if usage is not None:
        usage.added = ok and kept is result
    return kept


def display_text(segments: list[ReplySegment]) -> str:
    """The reply as users see it: each segment's content and (action); no emotion, no tts."""
    return visible_text((seg.content, seg.action) for seg in segments)


def history_messages(rows: Sequence[Any], d: DispatchResult) -> list[dict[str, str]]:
    """The dialogue history as chat messages for the turn's character: a run of user lines
    (merged or interrupted messages) keeps one message per line, named in a group, exactly as
    :func:`turn_user_text` showed them when they were new."""
    return build_memory(rows, role_id=d.role_id, user_separator="\n", name_users=bool(d.group_id))
