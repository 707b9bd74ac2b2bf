"""A turn's own heartbeat: while a worker works on a turn, its ``updated_at`` keeps moving.

The sweeper re-publishes a turn untouched for ``turn_lease_seconds`` (a worker died under it).
That lease can be short — a SIGKILLed worker's turn resumes within it — because every part of
a turn that may run long beats: each stage (:func:`nekoflow.turns.runner.execute_stage`), the
model call and an LLM review's call (their LLM lease, :mod:`nekoflow.turns.llm_lease`, streaming
included) and a delivery (``nekoflow.turn.deliver``). A beat touches the turn every third of the
lease, so a stage shorter than that costs no write at all; a dead worker's beats simply stop.
"""

from __future__ import annotations

from types import TracebackType

from sqlalchemy import and_, or_, update
from sqlalchemy.engine import Engine

from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.turns import TurnRun, TurnStatus
from nekoflow.turns.llm_lease import start_beat, stop_beat

_LIVE = (TurnStatus.queued.value, TurnStatus.running.value)
_DELIVERING = ("pending", "sending")  # DeliveryStatus' open states (no import of delivery here)


def touch_live_turn(engine: Engine, turn_id: str) -> bool:
    """Move ``updated_at`` of a turn still being worked on (queued or running, or its delivery
    open); False when it is neither any more (the beat stops)."""
    col = TurnRun.__table__.c  # type: ignore[attr-defined]
    with engine.begin() as conn:
        res = conn.execute(
            update(TurnRun.__table__)  # type: ignore[attr-defined]
            .where(
                and_(
                    col.turn_id == turn_id,
                    or_(col.status.in_(_LIVE), col.delivery_status.in_(_DELIVERING)),
                )
            )
            .values(updated_at=utcnow())
        )
        return bool(res.rowcount)


class TurnHeartbeat:
    """Keeps a turn's ``updated_at`` fresh (every third of ``lease_seconds``) while the block
    runs, by the process's one heartbeat thread: the sweeper leaves a live turn alone."""

    def __init__(self, engine: Engine, turn_id: str, *, lease_seconds: float) -> None:
        self._engine, self._turn_id, self._period = engine, turn_id, lease_seconds / 3
        self._key: int | None = None

    def __enter__(self) -> TurnHeartbeat:
        self._key = start_beat(self._beat, self._period)
        return self

    def _beat(self) -> bool:
        """One beat: touch the turn (False once nobody works on it any more)."""
        return touch_live_turn(self._engine, self._turn_id)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._key is not None:
            stop_beat(self._key)
