"""The outbox in SQL: one row per chunk, claimed and settled with conditional UPDATEs, and the
turn's delivery status derived from its rows.

Gateways that confirm a handed-over chunk later (OneBot reverse WebSocket) call
:func:`confirm_sent` / :func:`confirm_failed` with the chunk's key ``"{turn_id}:{index}"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, exists, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from nekoflow.delivery.base import Chunk, Destination
from nekoflow.delivery.tables import ChunkStatus, DeliveryStatus, OutboxRow
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.turns import FINISHED, TurnRun, TurnStatus

_OPEN = (DeliveryStatus.pending.value, DeliveryStatus.sending.value)
#: The outbox kind of a voice chunk (``nekoflow.turns.voice_outbox``): its failure is its own.
VOICE_KIND = "voice"


def chunk_key(turn_id: str, index: int) -> str:
    """The stable idempotency key of a chunk."""
    return f"{turn_id}:{index}"


def parse_key(key: str) -> tuple[str, int]:
    """``(turn_id, index)`` of a chunk key; ValueError when it is not one."""
    turn_id, sep, index = key.rpartition(":")
    if not sep or not turn_id or not index.isdigit():
        raise ValueError("not a chunk key (expected '<turn_id>:<index>')")
    return turn_id, int(index)


def rows_for(engine: Engine, turn_id: str) -> list[OutboxRow]:
    """The turn's outbox rows in index order."""
    with Session(engine, expire_on_commit=False) as s:
        return list(
            s.exec(
                select(OutboxRow).where(OutboxRow.turn_id == turn_id).order_by(col(OutboxRow.idx))
            ).all()
        )


def ensure_rows(
    engine: Engine, turn_id: str, dest: Destination, chunks: Sequence[Chunk]
) -> list[OutboxRow]:
    """The turn's outbox rows, created on first call (all in one transaction; a concurrent or
    repeated call finds them and creates nothing)."""
    rows = rows_for(engine, turn_id)
    if rows or not chunks:
        return rows
    with Session(engine) as s:
        for chunk in chunks:
            s.add(
                OutboxRow(
                    turn_id=turn_id,
                    idx=chunk.index,
                    platform=dest.platform,
                    bot=dest.bot,
                    chat_id=dest.chat_id,
                    destination=dest.model_dump(mode="json"),
                    kind=chunk.kind,
                    payload=chunk.payload,
                )
            )
        try:
            s.commit()
        except IntegrityError:
            s.rollback()  # created by a concurrent delivery of the same turn
    return rows_for(engine, turn_id)


def _update_row(engine: Engine, row_id: int, where: list, **values: object) -> bool:
    values.setdefault("updated_at", utcnow())
    stmt = update(OutboxRow).where(and_(col(OutboxRow.id) == row_id, *where)).values(**values)
    with Session(engine) as s:
        res = s.exec(stmt)  # type: ignore[call-overload]
        s.commit()
        return bool(res.rowcount)


def claim(engine: Engine, row: OutboxRow, lease_until: datetime) -> bool:
    """Take ``row`` for sending (attempts + 1) if nobody changed it since it was read."""
    assert row.id is not None
    return _update_row(
        engine,
        row.id,
        [col(OutboxRow.status) == row.status, col(OutboxRow.attempts) == row.attempts],
        status=ChunkStatus.sending.value,
        attempts=row.attempts + 1,
        lease_until=lease_until,
        not_before=None,
    )


def mark_sent(
    engine: Engine, row_id: int, platform_message_id: str | None, *, handed_over: bool = False
) -> None:
    """The platform took the chunk (or a gateway did, which confirms it later)."""
    now = utcnow()
    _update_row(
        engine,
        row_id,
        [col(OutboxRow.status) == ChunkStatus.sending.value],
        status=(ChunkStatus.handed_over if handed_over else ChunkStatus.sent).value,
        platform_message_id=platform_message_id,
        lease_until=None,
        error=None,
        sent_at=None if handed_over else now,
    )


def release(engine: Engine, row_id: int, reason: str, not_before: datetime | None = None) -> None:
    """A temporary failure: back to pending with the reason, to be tried again no earlier than
    ``not_before`` (the platform's retry_after or the backoff; None: at once)."""
    _update_row(
        engine,
        row_id,
        [col(OutboxRow.status) == ChunkStatus.sending.value],
        status=ChunkStatus.pending.value,
        lease_until=None,
        not_before=not_before,
        error=reason[:500],
    )


def mark_failed(engine: Engine, row_id: int, reason: str) -> None:
    """A permanent failure of the chunk."""
    _update_row(
        engine,
        row_id,
        [col(OutboxRow.status).not_in([ChunkStatus.sent.value])],
        status=ChunkStatus.failed.value,
        lease_until=None,
        error=reason[:500],
    )


def mark_unknown(engine: Engine, row: OutboxRow) -> bool:
    """A worker died while sending ``row`` and the platform cannot deduplicate: never resend."""
    assert row.id is not None
    return _update_row(
        engine,
        row.id,
        [col(OutboxRow.status) == row.status, col(OutboxRow.attempts) == row.attempts],
        status=ChunkStatus.unknown.value,
        lease_until=None,
        error="worker lost while the platform call was in flight; not re-sent",
    )


def mark_unconfirmed(engine: Engine, row_id: int, reason: str) -> bool:
    """The send may have reached the platform but was not confirmed (a read timeout, a lost
    connection) and the platform cannot deduplicate: record ``unknown``, never resend."""
    return _update_row(
        engine,
        row_id,
        [col(OutboxRow.status) == ChunkStatus.sending.value],
        status=ChunkStatus.unknown.value,
        lease_until=None,
        error=_not_resent(reason),
    )


def _confirm(engine: Engine, key: str, **values: object) -> bool:
    """Settle the handed-over (or in-flight) chunk named by ``key`` with ``values`` and settle
    its turn's delivery; False when the key names no unsettled chunk."""
    turn_id, index = parse_key(key)
    stmt = (
        update(OutboxRow)
        .where(
            col(OutboxRow.turn_id) == turn_id,
            col(OutboxRow.idx) == index,
            col(OutboxRow.status).in_([ChunkStatus.handed_over.value, ChunkStatus.sending.value]),
        )
        .values(updated_at=utcnow(), lease_until=None, **values)
    )
    with Session(engine) as s:
        res = s.exec(stmt)  # type: ignore[call-overload]
        s.commit()
    settle(engine, turn_id)
    return bool(res.rowcount)


def _not_resent(reason: str) -> str:
    """The stored reason of a chunk that may have arrived and is not sent again."""
    return f"{reason}; may have arrived, not re-sent"[:500]


def confirm_sent(engine: Engine, key: str, platform_message_id: str | None) -> bool:
    """A gateway confirms a handed-over chunk; the turn's delivery settles when all are.

    Returns False when the key names no unsettled chunk (already confirmed, or unknown)."""
    return _confirm(
        engine,
        key,
        status=ChunkStatus.sent.value,
        platform_message_id=platform_message_id,
        sent_at=utcnow(),
        error=None,
    )


def confirm_failed(engine: Engine, key: str, reason: str) -> bool:
    """A gateway reports that a handed-over chunk failed for good (reason: codes, no text)."""
    turn_id, index = parse_key(key)
    with Session(engine) as s:
        row = s.exec(
            select(OutboxRow).where(OutboxRow.turn_id == turn_id, OutboxRow.idx == index)
        ).first()
    if row is None or row.id is None or row.status in (ChunkStatus.sent, ChunkStatus.failed):
        return False
    mark_failed(engine, row.id, reason)
    settle(engine, turn_id)
    return True


def confirm_unknown(engine: Engine, key: str, reason: str) -> bool:
    """A gateway got an answer that does not say whether a handed-over chunk was sent (the
    platform cannot deduplicate): record it ``unknown``, never resent; False when the key names
    no unsettled chunk."""
    return _confirm(engine, key, status=ChunkStatus.unknown.value, error=_not_resent(reason))


def closed_delivery(reason: str) -> dict[str, Any]:
    """The ``delivery_status``/``delivery_reason`` values (SQL expressions for an UPDATE of the
    turn row) that close a still-open delivery as ``not_sent`` with ``reason``: a turn that ends
    with nothing to send. A turn with nothing to send anyway (None) keeps None."""
    is_open = col(TurnRun.delivery_status).in_(_OPEN)
    return {
        "delivery_status": case(
            (is_open, DeliveryStatus.not_sent.value), else_=col(TurnRun.delivery_status)
        ),
        "delivery_reason": case((is_open, reason), else_=col(TurnRun.delivery_reason)),
    }


def set_delivery(engine: Engine, turn_id: str, status: str | None, reason: str | None) -> None:
    """Write the turn's delivery status and reason (and touch it for the sweeper)."""
    stmt = (
        update(TurnRun)
        .where(col(TurnRun.turn_id) == turn_id)
        .values(delivery_status=status, delivery_reason=reason, updated_at=utcnow())
    )
    with Session(engine) as s:
        s.exec(stmt)  # type: ignore[call-overload]
        s.commit()


def mark_handed_over(engine: Engine, turn_id: str) -> None:
    """Record that the reply waits on a gateway's confirmation, unless one already settled it.

    Guarded on the open statuses: a gateway confirming between :func:`settle` and this write
    has already stored ``sent``/``failed``, which must not be overwritten.
    """
    open_ = (DeliveryStatus.pending.value, DeliveryStatus.sending.value)
    stmt = (
        update(TurnRun)
        .where(col(TurnRun.turn_id) == turn_id, col(TurnRun.delivery_status).in_(open_))
        .values(delivery_status=DeliveryStatus.handed_over.value, updated_at=utcnow())
    )
    with Session(engine) as s:
        s.exec(stmt)  # type: ignore[call-overload]
        s.commit()


def settle(engine: Engine, turn_id: str) -> str | None:
    """Derive the turn's delivery status from its rows and store it when it is final.

    Any failed text chunk → failed (with its reason); all sent, unknown or failed voice chunks
    → sent (the reason counts the unknown ones and names the failed voice: a voice never costs
    the text); otherwise it stays open and None is returned.
    """
    rows = rows_for(engine, turn_id)
    if not rows:
        return None
    failed = [r for r in rows if r.status == ChunkStatus.failed and r.kind != VOICE_KIND]
    if failed:
        set_delivery(
            engine,
            turn_id,
            DeliveryStatus.failed.value,
            f"chunk {failed[0].idx}: {failed[0].error}",
        )
        return DeliveryStatus.failed.value
    settled = (ChunkStatus.sent, ChunkStatus.unknown, ChunkStatus.failed)
    if all(r.status in settled for r in rows):
        unknown = [r.idx for r in rows if r.status == ChunkStatus.unknown]
        notes = [f"{len(unknown)} chunk(s) unconfirmed: {unknown}"] if unknown else []
        notes += [f"voice chunk {r.idx} failed: {r.error}" for r in rows if r.status == "failed"]
        set_delivery(engine, turn_id, DeliveryStatus.sent.value, "; ".join(notes)[:1000] or None)
        return DeliveryStatus.sent.value
    return None


def earlier_open_delivery(engine: Engine, run: TurnRun) -> str | None:
    """The turn id of an earlier turn of the same scope whose reply is still on its way (replies
    to one conversation go out in turn order), if any."""
    if run.scope_id is None or run.seq is None:
        return None
    with Session(engine) as s:
        return s.exec(
            select(TurnRun.turn_id)
            .where(
                TurnRun.scope_id == run.scope_id,
                col(TurnRun.seq) < run.seq,
                col(TurnRun.delivery_status).in_(_OPEN),
                # a superseded turn sends nothing (the turn that took over answers)
                col(TurnRun.status).not_in([TurnStatus.superseded.value]),
            )
            .limit(1)
        ).first()


def next_open_delivery(engine: Engine, run: TurnRun) -> str | None:
    """The earliest later finished turn of ``run``'s scope whose delivery is open, if any."""
    if run.scope_id is None or run.seq is None:
        return None
    with Session(engine) as s:
        return s.exec(
            select(TurnRun.turn_id)
            .where(
                TurnRun.scope_id == run.scope_id,
                col(TurnRun.seq) > run.seq,
                col(TurnRun.status).in_(list(FINISHED)),
                col(TurnRun.delivery_status).in_(_OPEN),
            )
            .order_by(col(TurnRun.seq))
            .limit(1)
        ).first()


def stalled_deliveries(
    engine: Engine, *, older_than: timedelta, now: datetime | None = None
) -> list[TurnRun]:
    """Finished turns whose delivery is open and untouched for ``older_than`` (a lost message
    or a dead worker), oldest first."""
    cutoff = (now or utcnow()) - older_than
    with Session(engine, expire_on_commit=False) as s:
        return list(
            s.exec(
                select(TurnRun)
                .where(
                    col(TurnRun.status).in_(list(FINISHED)),
                    col(TurnRun.delivery_status).in_(_OPEN),
                    col(TurnRun.updated_at) < cutoff,
                )
                .order_by(col(TurnRun.created_at))
            ).all()
        )


def has_rows(engine: Engine, turn_id: str) -> bool:
    """True when the turn's outbox rows exist."""
    with Session(engine) as s:
        return bool(s.exec(select(exists().where(col(OutboxRow.turn_id) == turn_id))).one())
