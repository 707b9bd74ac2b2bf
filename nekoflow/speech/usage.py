"""Speech usage: characters synthesized per provider (cache hits cost nothing) and their cost
from the price table (``NEKOFLOW_SPEECH_PRICES``: per million characters)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import case, func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.speech.plan import PartState
from nekoflow.speech.tables import VoicePart


def speech_cost(prices: Mapping[str, float], provider: str, chars: int) -> float | None:
    """What ``chars`` synthesized characters of ``provider`` cost (None: no price)."""
    price = prices.get(provider)
    return None if price is None else chars * price / 1_000_000


def speech_report(
    engine: Engine,
    *,
    since: date | None = None,
    until: date | None = None,
    prices: Mapping[str, float] | None = None,
) -> list[dict[str, Any]]:
    """Per provider: voiced lines, synthesized / cached / failed, characters synthesized,
    the cache hit rate and the cost."""
    ready = col(VoicePart.state) == PartState.ready.value
    synthesized = ready & (col(VoicePart.cached).is_(False))
    stmt = select(
        VoicePart.provider,
        func.count(),
        func.sum(case((synthesized, 1), else_=0)),
        func.sum(case((ready & col(VoicePart.cached).is_(True), 1), else_=0)),
        func.sum(case((col(VoicePart.state) == PartState.failed.value, 1), else_=0)),
        func.sum(case((synthesized, col(VoicePart.chars)), else_=0)),
    ).group_by(VoicePart.provider)
    if since is not None:
        stmt = stmt.where(col(VoicePart.created_at) >= datetime.combine(since, time(), UTC))
    if until is not None:
        end = datetime.combine(until + timedelta(days=1), time(), UTC)
        stmt = stmt.where(col(VoicePart.created_at) < end)
    with Session(engine) as s:
        rows = s.exec(stmt).all()
    out = []
    for provider, lines, made, hits, failed, chars in sorted(rows, key=lambda r: r[0] or ""):
        made, hits, chars = int(made or 0), int(hits or 0), int(chars or 0)
        out.append(
            {
                "provider": provider,
                "lines": int(lines),
                "synthesized": made,
                "cached": hits,
                "failed": int(failed or 0),
                "chars": chars,
                "hit_rate": round(hits / (made + hits), 4) if made + hits else None,
                "cost": speech_cost(prices or {}, provider, chars),
            }
        )
    return out
