"""What a turn's model calls cost: usage rows stored with the stage result, quota checks.

Kept beside the stages so they stay about the turn; the rows and counters live in
``nekoflow.usage`` (the ledger in SQL, today's totals in Redis).
"""

from __future__ import annotations

import logging

from nekoflow.observability import hooks
from nekoflow.redact import safe_error
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.errors import TurnSkipped
from nekoflow.turns.models import DispatchResult
from nekoflow.turns.stage_store import ExtraRows
from nekoflow.usage.meter import UsageEntry
from nekoflow.usage.store import USAGE_TABLE, day_totals, today, tokens_today, usage_rows

log = logging.getLogger(__name__)


class TurnUsage:
    """The usage rows a stage paid for: stored with the stage's result (only when its result
    is the one kept: ``added``), then counted in the quota counters once committed."""

    def __init__(
        self, run: TurnRun, d: DispatchResult, kind: str, entries: list[UsageEntry]
    ) -> None:
        self.run, self.d, self.kind, self.entries = run, d, kind, entries
        self.added = False

    def dims(self) -> list[tuple[str, str]]:
        """The quota dimensions this usage counts against."""
        d = self.d
        pairs = [("scope", d.scope_id), ("user", d.user_id), ("channel", self.run.channel)]
        return [*pairs, ("character", str(d.role_id))]

    def rows(self) -> ExtraRows:
        """The usage rows, to be stored with the stage's result (``put_stage(rows=…)``)."""
        return USAGE_TABLE, usage_rows(
            self.entries,
            kind=self.kind,
            turn_id=self.run.turn_id,
            channel=self.run.channel,
            scope_id=self.d.scope_id,
            user_id=self.d.user_id,
            character=str(self.d.role_id),
        )

    def count(self, deps: TurnDeps) -> None:
        """After the commit: add the tokens to today's quota counters (best effort)."""
        if self.added:
            hooks.usage(
                self.kind, [(e.model, e.prompt_tokens, e.completion_tokens) for e in self.entries]
            )
        counters = deps.quota_counters
        if not self.added or counters is None:
            return
        tokens = sum(e.prompt_tokens + e.completion_tokens for e in self.entries)
        try:
            counters.add(today(), [(k, v) for k, v in self.dims() if v], tokens)
        except Exception as exc:  # SQL holds the record; the counter refills from it
            log.warning("could not count quota usage (%s)", safe_error(exc))


def check_quota(
    deps: TurnDeps, channel: str, *, scope: str, user: str, character: str
) -> str | None:
    """None when the turn may call its model; the channel's ``quota_fallback_model`` when a
    daily token quota of this scope, user, channel or character is used up and one is set;
    else raise :class:`TurnSkipped` (``quota_exceeded``). Redis counters, SQL fallback."""
    policy = deps.flow.for_channel(channel)
    quotas = policy.quotas(scope=scope, user=user, channel=channel, character=character)
    if not quotas:
        return None
    day = today()
    pairs = [(dim, value) for dim, _, value in quotas]
    cached: list[int | None] = [None] * len(quotas)
    counters = deps.quota_counters
    if counters is not None:
        try:
            cached = counters.get(day, pairs)
            if None in cached:  # the day's first check, or Redis lost its counters
                totals = day_totals(deps.engine, day)
                counters.rebuild(day, totals)
                cached = [totals.get(pair, 0) for pair in pairs]
        except Exception as exc:
            log.warning("quota counters unavailable (%s); reading SQL", safe_error(exc))
            cached = [None] * len(quotas)
    for (dim, limit, value), used in zip(quotas, cached, strict=True):
        if used is None:
            used = tokens_today(deps.engine, dim, value, day=day)
        if used >= limit:
            if policy.quota_fallback_model:
                return policy.quota_fallback_model
            raise TurnSkipped("quota_exceeded")
    return None
