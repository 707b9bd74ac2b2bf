"""SQL side of speech: a turn's assistant lines, its voice parts, and the clip cache."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from nekoflow.speech.plan import LineIn, PartState
from nekoflow.speech.tables import SpeechClip, VoicePart
from nekoflow.storage.dialogue import Line, Role, utcnow


def assistant_lines(engine: Engine, turn_id: str) -> list[LineIn]:
    """The turn's reply lines (assistant lines written by memory_build), in order."""
    with Session(engine) as s:
        rows = s.exec(
            select(Line.id, Line.content, Line.tts_content)
            .where(Line.turn_id == turn_id, Line.attribute == "assistant")
            .order_by(col(Line.id))
        ).all()
    return [LineIn(line_id=int(i), content=c or "", tts=t) for i, c, t in rows]


def line_text(engine: Engine, line_id: int) -> LineIn | None:
    """One line (loaded in the worker: text never travels in task arguments)."""
    with Session(engine) as s:
        row = s.exec(
            select(Line.id, Line.content, Line.tts_content).where(Line.id == line_id)
        ).first()
    return None if row is None else LineIn(line_id=int(row[0]), content=row[1] or "", tts=row[2])


def role_name(engine: Engine, role_id: int | None) -> str | None:
    """The character's name (voices are configured by name or id)."""
    if role_id is None:
        return None
    with Session(engine) as s:
        return s.exec(select(Role.name).where(Role.id == role_id)).first()


def parts_for(engine: Engine, turn_id: str) -> list[VoicePart]:
    """The turn's voice parts in order."""
    with Session(engine, expire_on_commit=False) as s:
        return list(
            s.exec(
                select(VoicePart).where(VoicePart.turn_id == turn_id).order_by(col(VoicePart.part))
            ).all()
        )


def ensure_parts(engine: Engine, turn_id: str, values: Sequence[dict[str, Any]]) -> list[VoicePart]:
    """The turn's voice parts, created on first call (one transaction; a concurrent or
    repeated call creates nothing)."""
    rows = parts_for(engine, turn_id)
    if rows or not values:
        return rows
    with Session(engine) as s:
        for v in values:
            s.add(VoicePart(turn_id=turn_id, **v))
        try:
            s.commit()
        except IntegrityError:
            s.rollback()
    return parts_for(engine, turn_id)


def settle_part(engine: Engine, part_id: int, state: PartState, **values: Any) -> bool:
    """Record an awaiting part ``ready`` or ``failed`` (once: False when it was settled)."""
    stmt = (
        update(VoicePart)
        .where(col(VoicePart.id) == part_id, col(VoicePart.state) == PartState.awaiting.value)
        .values(state=state.value, updated_at=utcnow(), **values)
    )
    with Session(engine) as s:
        res = s.exec(stmt)  # type: ignore[call-overload]
        s.commit()
        return bool(res.rowcount)


def get_clip(engine: Engine, key: str) -> SpeechClip | None:
    """The cached clip under ``key``, if any."""
    with Session(engine, expire_on_commit=False) as s:
        return s.get(SpeechClip, key)


def touch_clip(engine: Engine, key: str) -> None:
    """Count a cache hit."""
    stmt = (
        update(SpeechClip)
        .where(col(SpeechClip.key) == key)
        .values(hits=col(SpeechClip.hits) + 1, last_used_at=utcnow())
    )
    with Session(engine) as s:
        s.exec(stmt)  # type: ignore[call-overload]
        s.commit()


def put_clip(engine: Engine, key: str, fmt: str, audio: bytes, duration_ms: int = 0) -> None:
    """Cache a clip (a concurrent writer of the same key wins: same audio)."""
    with Session(engine) as s:
        s.add(SpeechClip(key=key, fmt=fmt, audio=audio, size=len(audio), duration_ms=duration_ms))
        try:
            s.commit()
        except IntegrityError:
            s.rollback()


def awaiting_parts(engine: Engine, since: datetime) -> dict[str, list[datetime]]:
    """Turns with parts still awaiting synthesis (created after ``since``): their update times."""
    with Session(engine) as s:
        rows = s.exec(
            select(VoicePart.turn_id, VoicePart.updated_at).where(
                VoicePart.state == PartState.awaiting.value, col(VoicePart.created_at) > since
            )
        ).all()
    out: dict[str, list[datetime]] = {}
    for turn_id, updated in rows:
        out.setdefault(turn_id, []).append(updated)
    return out


def touch_parts(engine: Engine, turn_id: str) -> None:
    """Mark a turn's awaiting parts as just handed to a synthesis task again."""
    stmt = (
        update(VoicePart)
        .where(col(VoicePart.turn_id) == turn_id, col(VoicePart.state) == PartState.awaiting.value)
        .values(updated_at=utcnow())
    )
    with Session(engine) as s:
        s.exec(stmt)  # type: ignore[call-overload]
        s.commit()


def prune_clips(engine: Engine, unused_since: datetime) -> int:
    """Delete the clips not used since ``unused_since``; how many went."""
    stmt = delete(SpeechClip).where(col(SpeechClip.last_used_at) < unused_since)
    with Session(engine) as s:
        res = s.exec(stmt)  # type: ignore[call-overload]
        s.commit()
        return int(res.rowcount or 0)
