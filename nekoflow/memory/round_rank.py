"""SQL shell of past rounds in a prompt: the scope's rounds for a message, ranked, within a budget.

Candidates come from the full-text engine over all of the scope's rounds
(:func:`nekoflow.memory.rounds.round_candidates`); they are re-scored by BM25 with the
message's terms at full weight and recent user lines' lightly; a time the message names
("昨天", "last Tuesday") puts the rounds told about it, then those said in it, first.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlmodel import Session

from nekoflow.memory.lexical import CorpusStats, bm25_scorer, doc_terms, query_terms
from nekoflow.memory.rounds import RoundRow, round_candidates, round_stats
from nekoflow.memory.search import MATCH_BUDGET
from nekoflow.memory.settings import MemorySettings
from nekoflow.memory.timeq import TimeRange, parse_time
from nekoflow.memory.window import round_line
from nekoflow.tokens import estimate_tokens

__all__ = ["CONTEXT_WEIGHT", "ranked_rounds", "rounds_within"]

#: Weight of a term of the recent user lines (the message's own terms weigh 1).
CONTEXT_WEIGHT = 0.3
#: A past round's user words and reply in the prompt are cut to these many characters.
ROUND_USER_CHARS = 160
ROUND_REPLY_CHARS = 60


def _without(message: str, when: TimeRange | None) -> str:
    """The message without its time expression (its words are not what is looked for)."""
    if when is None:
        return message
    a, b = when.span
    return f"{message[:a]} {message[b:]}"


#: A round said up to this long after a time the message names may be about that time.
REFERS_BACK = timedelta(days=7)


def _refers_to(r: RoundRow, when: TimeRange) -> bool:
    """Whether the round's user words name a time (relative to when it was said) in ``when``."""
    said = parse_time(r.user_text, r.created_at)
    return said is not None and said.start < when.end and when.start < said.end


def ranked_rounds(
    s: Session,
    *,
    role_id: int,
    scope_id: str,
    message: str,
    context: Sequence[str],
    now: datetime,
    settings: MemorySettings,
    below_line: int | None = None,
    stats: CorpusStats | None = None,
    query: dict[str, float] | None = None,
) -> list[RoundRow]:
    """The scope's past rounds for this message, best first: the full-text engine's candidates
    over all of the scope's rounds, re-scored by BM25 with the message's terms at full weight
    and recent user lines' at :data:`CONTEXT_WEIGHT`; rounds in a time the message names come
    first (said then, or said within :data:`REFERS_BACK` after it about it: "昨天…" told today);
    ties go to the newest. Rounds relevant by nothing are left out. When the named time holds no
    round (a plan "in December"), the time words are searched like any other. ``stats``: the
    rounds' statistics for (at least) the message's terms, when already read; ``query``: the
    message's :func:`query_terms` (with ``context``), when already made."""
    if settings.round_candidates <= 0:
        return []
    full = query if query is not None else query_terms(message, context, CONTEXT_WEIGHT)
    if stats is None:
        stats = round_stats(s, role_id, scope_id, full)
    when = parse_time(message, now)
    # The dated candidates are matched without the time words; those of any date with them,
    # in the same call, so that a named time holding nothing needs no second search.
    timed = query_terms(_without(message, when), context, CONTEXT_WEIGHT) if when else full
    rows = round_candidates(
        s,
        role_id,
        scope_id,
        timed,
        stats,
        limit=settings.round_candidates,
        budget=MATCH_BUDGET,
        below_line=below_line,
        when=when,
        refers_back=REFERS_BACK,
        wide=full if when else None,
        now=now,
    )
    tiers = [_tier(r, when) for r in rows] if when is not None else [0] * len(rows)
    if not any(tiers):  # the named time holds nothing: its words are searched like any other
        timed, tiers = full, [0] * len(rows)
    own = {t: w for t, w in timed.items() if w >= 1.0}
    scorer = bm25_scorer(own or timed, stats)
    context_scorer = bm25_scorer({t: w for t, w in timed.items() if w < 1.0}, stats)
    raw = [(scorer(doc_terms(r.terms)), context_scorer(doc_terms(r.terms)), r) for r in rows]
    top = max((c for _, c, _ in raw), default=0.0) or 1.0
    scored = []
    for (score, extra, r), tier in zip(raw, tiers, strict=True):
        # Context (recent user lines) moves a score by at most 2 %: the message's words rule.
        score *= 1.0 + 0.02 * extra / top
        if score > 0 or tier:
            scored.append((tier, score, r))
    scored.sort(key=lambda p: (-p[0], -p[1], -p[2].created_at.timestamp(), -p[2].id))
    return [r for _, _, r in scored]


def _tier(r: RoundRow, when: TimeRange) -> int:
    """Told about the named time in so many words (2), said in it (1), or neither (0)."""
    return 2 if _refers_to(r, when) else 1 if when.contains(r.created_at) else 0


def _round_text(r: RoundRow) -> str:
    user = r.user_text.replace("\n", " ")[:ROUND_USER_CHARS]
    reply = r.reply_text.replace("\n", " ")[:ROUND_REPLY_CHARS]
    return round_line(r.created_at.date().isoformat(), user, reply)


def rounds_within(rounds: Sequence[RoundRow], budget: int) -> list[tuple[RoundRow, str]]:
    """The best rounds whose prompt lines fit ``budget`` tokens, in rank order."""
    chosen: list[tuple[RoundRow, str]] = []
    used = 0
    for r in rounds:
        if budget - used < 8:
            break
        line = _round_text(r)
        cost = estimate_tokens(line) + 1
        if used + cost > budget:
            continue
        chosen.append((r, line))
        used += cost
    return chosen
