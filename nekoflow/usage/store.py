"""SQL side of usage: recording calls, today's totals for quotas, and the usage report."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime
from typing import Any, Literal

from sqlalchemy import bindparam, case, func, insert
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from nekoflow.prices import Price, cost
from nekoflow.storage import read_session
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.fastsql import Bind, FastStatement
from nekoflow.storage.usage import LLMUsage
from nekoflow.usage.meter import UsageEntry

GroupBy = Literal["day", "channel", "character", "scope", "model", "kind"]
"""What the usage report groups by."""

_GROUP_COLUMNS: dict[str, Any] = {
    "day": LLMUsage.day,
    "channel": LLMUsage.channel,
    "character": LLMUsage.character,
    "scope": LLMUsage.scope_id,
    "model": LLMUsage.model,
    "kind": LLMUsage.kind,
}


def today(now: datetime | None = None) -> str:
    """The UTC day quotas count in, ``YYYY-MM-DD``."""
    return (now or datetime.now(UTC)).astimezone(UTC).date().isoformat()


def usage_rows(
    entries: Iterable[UsageEntry],
    *,
    kind: str,
    turn_id: str | None,
    channel: str = "",
    scope_id: str = "",
    user_id: str = "",
    character: str = "",
) -> list[dict[str, Any]]:
    """The ``llm_usage`` rows (column values) of these model calls, numbered from 1."""
    day, now = today(), utcnow()
    return [
        {
            "day": day,
            "kind": kind,
            "turn_id": turn_id,
            "n": n,
            "channel": channel,
            "scope_id": scope_id,
            "user_id": user_id[:200],
            "character": character,
            "model": entry.model[:200],
            "prompt_tokens": entry.prompt_tokens,
            "completion_tokens": entry.completion_tokens,
            "estimated": entry.estimated,
            "created_at": now,
        }
        for n, entry in enumerate(entries, start=1)
    ]


def add_usage(session: Bind, entries: Iterable[UsageEntry], **fields: Any) -> int:
    """Add usage rows (:func:`usage_rows` of ``entries`` and ``fields``) in the caller's
    transaction, committed with the work they paid for: one Core insert built once, not the
    ORM's unit of work, as it runs with every model call."""
    rows = usage_rows(entries, **fields)
    for row in rows:  # one per model call, nearly always
        _INSERT.rows(session, row)
    return len(rows)


_USAGE: Any = LLMUsage.__table__  # type: ignore[attr-defined]
USAGE_TABLE: Any = _USAGE
"""The ``llm_usage`` table (for statements that insert its rows with other work)."""
_INSERT = FastStatement(
    insert(_USAGE).values(
        {c.name: bindparam(c.name, type_=c.type) for c in _USAGE.c if c.name != "id"}
    )
)
"""One usage row (built once; bind parameters named as the columns)."""


def tokens_today(engine: Engine, dimension: str, value: str, *, day: str | None = None) -> int:
    """Prompt + completion tokens recorded today for ``dimension`` (scope, user, channel or
    character) = ``value``."""
    column = _QUOTA_COLUMNS[dimension]
    stmt = sa_select(
        func.coalesce(func.sum(LLMUsage.prompt_tokens + LLMUsage.completion_tokens), 0)
    ).where(LLMUsage.day == (day or today()), column == value)
    with engine.connect() as conn:  # Core, no ORM session: this runs before every LLM call
        return int(conn.execute(stmt).scalar_one())


_QUOTA_COLUMNS: dict[str, Any] = {
    "scope": LLMUsage.scope_id,
    "user": LLMUsage.user_id,
    "channel": LLMUsage.channel,
    "character": LLMUsage.character,
}


def day_totals(engine: Engine, day: str) -> dict[tuple[str, str], int]:
    """Tokens of ``day`` per quota dimension and value — every counter the quota check keeps
    (one grouped query per dimension, on one connection)."""
    tokens = func.sum(LLMUsage.prompt_tokens + LLMUsage.completion_tokens)
    out: dict[tuple[str, str], int] = {}
    with engine.connect() as conn:
        for dim, column in _QUOTA_COLUMNS.items():
            stmt = sa_select(column, tokens).where(LLMUsage.day == day).group_by(column)
            out.update({(dim, str(v)): int(n or 0) for v, n in conn.execute(stmt) if v})
    return out


def usage_report(
    engine: Engine,
    *,
    by: GroupBy = "day",
    since: date | None = None,
    until: date | None = None,
    prices: Mapping[str, Price] | None = None,
) -> list[dict[str, Any]]:
    """Calls and tokens grouped by ``by`` (and model, for pricing), with the cost when every
    model in the group has a price (else ``cost`` is None and ``unpriced`` lists the models)."""
    key = _GROUP_COLUMNS[by]
    query = select(
        key,
        LLMUsage.model,
        func.count(),
        func.sum(LLMUsage.prompt_tokens),
        func.sum(LLMUsage.completion_tokens),
        func.sum(case((col(LLMUsage.estimated), 1), else_=0)),
    ).group_by(key, LLMUsage.model)
    if since is not None:
        query = query.where(col(LLMUsage.day) >= since.isoformat())
    if until is not None:
        query = query.where(col(LLMUsage.day) <= until.isoformat())
    with read_session(engine) as s:
        rows = s.exec(query).all()
    out: dict[str, dict[str, Any]] = {}
    for group, model, calls, prompt, completion, estimated in rows:
        row = out.setdefault(
            str(group),
            {
                by: str(group),
                "calls": 0,
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "total_tokens": 0,
                "estimated_calls": 0,
                "cost": 0.0,
                "unpriced": [],
            },
        )
        prompt, completion = int(prompt or 0), int(completion or 0)
        row["calls"] += int(calls)
        row["prompt_tokens"] += prompt
        row["completion_tokens"] += completion
        row["total_tokens"] += prompt + completion
        row["estimated_calls"] += int(estimated or 0)
        price = cost(prices or {}, model, prompt, completion)
        if price is None:
            row["unpriced"].append(model)
        elif row["cost"] is not None:
            row["cost"] += price
    for row in out.values():
        if row["unpriced"]:
            row["cost"] = None
        else:
            row["cost"] = round(row["cost"], 6)
    return [out[k] for k in sorted(out)]
