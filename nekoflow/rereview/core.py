"""Pure core of the bulk re-review: turn extraction, review inputs, reviewer versions, replay.

No Celery, Redis or SQL here: callers hand in the active path of a save (rows with ``Line``'s
field names, root first, e.g. from :func:`nekoflow.memory.history.load_history_rows`) and the
choice/channel information of the turns' ``TurnRun`` rows.

A historical turn is a run of consecutive user lines followed by the character's reply lines (the
save role's assistant lines, or assistant lines with no role) up to the next user line. Other
speakers' lines (narrator, other characters, system) between them are context, not part of the
reply. A user run that was never answered (a failed turn) is not a turn — a live turn that failed
is never reviewed either. The real-time gap is taken from the line before the turn's first user
line to that user line, exactly as ``dispatch`` does with the save's leaf at send time.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from nekoflow.memory.reply import visible_text
from nekoflow.review.models import (
    RELATIONSHIP_DIMENSIONS,
    ReviewInput,
    ReviewOutput,
    clamp_dimension,
)
from nekoflow.review.rules import DEFAULT_KEYWORDS, ReviewKeywords
from nekoflow.review.timegap import real_time_context

log = logging.getLogger(__name__)

RULES_FILE = Path(__file__).resolve().parents[1] / "review" / "rules.py"

Reviewer = Callable[[ReviewInput], ReviewOutput]
"""Reviews one turn (rule review, or the LLM pipeline with its per-turn fallback)."""


class PathLine(Protocol):
    """The fields of a dialogue line the extraction reads (``Line`` rows or light rows)."""

    id: Any
    attribute: str
    content: str
    action_content: str | None
    role_id: int | None
    turn_id: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What a turn's ``TurnRun`` adds to a historical turn: plot choice, channel, user/group."""

    choice: dict[str, Any] | None = None
    channel: str | None = None
    user_id: str = ""
    group_id: str | None = None


@dataclass(frozen=True, slots=True)
class HistoricalTurn:
    """One turn on a save's active path: the user run and the character's reply."""

    save_id: int
    line_id: int
    role_id: int
    scope_id: str
    seq: int
    turn_id: str | None
    user_message: str
    assistant_message: str
    sent_at: datetime
    previous_at: datetime | None

    @property
    def key(self) -> str:
        """The turn key: ``{save_id}:{first user line id}`` (stable across re-reviews)."""
        return f"{self.save_id}:{self.line_id}"


@dataclass(slots=True)
class Extraction:
    """The turns of one save and how many user runs had no reply."""

    turns: list[HistoricalTurn]
    unanswered: int = 0


def reply_text(lines: Iterable[PathLine]) -> str:
    """The reply as the live review saw it: content plus (action) per line, no emotion/tts."""
    return visible_text((line.content, line.action_content) for line in lines)


def extract_turns(
    save_id: int, role_id: int, scope_id: str, path: Sequence[PathLine]
) -> Extraction:
    """Split a save's active path (root first) into historical turns, in order."""
    out = Extraction(turns=[])
    previous_at: datetime | None = None
    i, n = 0, len(path)
    while i < n:
        line = path[i]
        if line.attribute != "user":
            previous_at = line.created_at
            i += 1
            continue
        users = []
        while i < n and path[i].attribute == "user":
            users.append(path[i])
            i += 1
        replies = []
        while i < n and path[i].attribute != "user":
            other = path[i]
            if other.attribute == "assistant" and other.role_id in (role_id, None):
                replies.append(other)
            i += 1
        if not replies:
            out.unanswered += 1
        else:
            turn_id = next((u.turn_id for u in users if u.turn_id), None)
            if turn_id is None:
                turn_id = next((r.turn_id for r in replies if r.turn_id), None)
            out.turns.append(
                HistoricalTurn(
                    save_id=save_id,
                    line_id=int(users[0].id),
                    role_id=role_id,
                    scope_id=scope_id,
                    seq=len(out.turns),
                    turn_id=turn_id,
                    user_message="\n".join(u.content or "" for u in users),
                    assistant_message=reply_text(replies),
                    sent_at=users[0].created_at,
                    previous_at=previous_at,
                )
            )
        previous_at = path[i - 1].created_at
    return out


def run_info(
    request: Mapping[str, Any] | None, context: Mapping[str, Any] | None, channel: str
) -> RunInfo:
    """The RunInfo of a stored ``TurnRun`` (its request JSON, context JSON and channel)."""
    req = request or {}
    ctx = context or {}
    metadata = req.get("metadata") if isinstance(req.get("metadata"), dict) else {}
    choice = metadata.get("choice") if isinstance(metadata.get("choice"), dict) else None
    user_id = req.get("user_id") or ctx.get("user_id") or ""
    group_id = req.get("group_id") or ctx.get("group_id") or None
    return RunInfo(choice=choice, channel=channel, user_id=str(user_id), group_id=group_id)


def review_input(
    turn: HistoricalTurn,
    relationship: Mapping[str, int],
    info: RunInfo | None = None,
    recent_messages: list[dict[str, str]] | None = None,
) -> ReviewInput:
    """The ReviewInput the live review stage would have built for this turn.

    Same fields as ``nekoflow.turns.stages.review_input``; the channel falls back to the scope
    id's prefix when no TurnRun is known. An invalid recorded choice is dropped, as live.
    """
    info = info or RunInfo()
    channel = info.channel or turn.scope_id.split(":", 1)[0]
    fields: dict[str, Any] = {
        "conversation_id": turn.scope_id,
        "character_id": str(turn.role_id),
        "user_id": info.user_id,
        "group_id": info.group_id or None,
        "user_message": turn.user_message,
        "assistant_message": turn.assistant_message,
        "selected_choice": info.choice,
        "relationship_state": dict(relationship),
        "real_time_context": real_time_context(turn.previous_at, turn.sent_at).to_dict(),
        "turn_context": {"turn_id": turn.turn_id, "channel": channel},
    }
    if recent_messages:
        fields["recent_messages"] = recent_messages
    try:
        return ReviewInput.model_validate(fields)
    except ValidationError as exc:
        log.warning("turn %s: ignoring invalid plot choice: %s", turn.key, exc.errors()[0]["msg"])
        fields["selected_choice"] = None
        return ReviewInput.model_validate(fields)


def reviewer_version(
    mode: str, keywords: ReviewKeywords = DEFAULT_KEYWORDS, model: str | None = None
) -> str:
    """A version string for a reviewer: mode, a hash of the rules source and the keyword lists
    (and the LLM model name in llm mode). Any rule or keyword change gives a new version."""
    digest = hashlib.sha256()
    digest.update(RULES_FILE.read_bytes())
    for pattern in (keywords.trust, keywords.affection, keywords.negative):
        digest.update(b"\0" + pattern.encode())
    if mode == "llm":
        digest.update(b"\0llm\0" + (model or "").encode())
    return f"{mode}-{digest.hexdigest()[:16]}"


@dataclass(slots=True)
class Replay:
    """A relationship replayed turn by turn from its initial state (clamped like the live apply)."""

    state: dict[str, int]
    turns: int = 0
    totals: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(RELATIONSHIP_DIMENSIONS, 0)
    )

    @classmethod
    def start(cls, initial: Mapping[str, int]) -> Replay:
        """A replay from ``initial`` (the role's initial relationship)."""
        return cls(state={d: int(initial.get(d, 0)) for d in RELATIONSHIP_DIMENSIONS})

    def apply(self, delta: Mapping[str, int] | None) -> None:
        """Add one turn's delta (None: the turn counts, nothing changes)."""
        if delta is not None:
            for dim in RELATIONSHIP_DIMENSIONS:
                step = int(delta.get(dim, 0))
                self.totals[dim] += step
                self.state[dim] = clamp_dimension(self.state[dim] + step)
        self.turns += 1


def delta_of(output: ReviewOutput) -> dict[str, int] | None:
    """The six-dimension delta of a review output (None when the review produced none)."""
    delta = output.relationship_delta
    return None if delta is None else delta.as_dict()


def plot_level(output: ReviewOutput) -> str | None:
    """The plot node level the output creates, or None."""
    plot = output.plot_update
    return str(plot.level) if plot is not None and plot.should_create_node else None


def memory_writes(output: ReviewOutput) -> int:
    """How many memory rows the output writes."""
    return len(output.memory_items) if output.should_write_memory else 0


@dataclass(slots=True)
class SaveOutcome:
    """The re-review of one save: a record per turn and the replayed end state."""

    save_id: int
    role_id: int
    scope_id: str
    records: list[dict[str, Any]]
    replay: Replay
    unanswered: int = 0
    skipped: int = 0
    memories: int = 0
    plots: int = 0
    fallbacks: int = 0

    def summary(self) -> dict[str, Any]:
        """A JSON-able summary (what the job keeps per save for diffs and totals)."""
        return {
            "role_id": self.role_id,
            "scope_id": self.scope_id,
            "turns": self.replay.turns,
            "state": dict(self.replay.state),
            "totals": dict(self.replay.totals),
            "unanswered": self.unanswered,
            "skipped": self.skipped,
            "memories": self.memories,
            "plots": self.plots,
            "fallbacks": self.fallbacks,
        }


def record_values(
    turn: HistoricalTurn, output: ReviewOutput, version: str, job_id: int
) -> dict[str, Any]:
    """The ReviewRecord column values of one reviewed turn (the output stored compactly)."""
    delta = delta_of(output) or dict.fromkeys(RELATIONSHIP_DIMENSIONS, 0)
    scores = output.scores
    return {
        "save_id": turn.save_id,
        "line_id": turn.line_id,
        "reviewer_version": version,
        "job_id": job_id,
        "role_id": turn.role_id,
        "scope_id": turn.scope_id,
        "seq": turn.seq,
        "turn_id": turn.turn_id,
        "sent_at": turn.sent_at,
        "source": output.source,
        "skipped": output.skipped,
        "fallback_reason": output.fallback_reason,
        **delta,
        "has_delta": output.relationship_delta is not None,
        "memory_value": scores.memory_value if scores is not None else 0.0,
        "memory_writes": memory_writes(output),
        "plot_level": plot_level(output),
        "output": output.model_dump(mode="json", exclude_defaults=True),
    }


def review_save(
    turns: Sequence[HistoricalTurn],
    initial: Mapping[str, int],
    reviewer: Reviewer,
    *,
    version: str,
    job_id: int,
    runs: Mapping[str, RunInfo] | None = None,
    recent_limit: int = 0,
    save: tuple[int, int, str] | None = None,
) -> SaveOutcome:
    """Review a save's turns in order, each seeing the relationship replayed so far.

    ``recent_limit`` > 0 adds the last that many messages (user/assistant pairs of the previous
    turns) as ``recent_messages`` — used in llm mode; the rule review does not read them.
    """
    runs = runs or {}
    first = turns[0] if turns else None
    save_id, role_id, scope_id = save or (
        (first.save_id, first.role_id, first.scope_id) if first else (0, 0, "")
    )
    outcome = SaveOutcome(save_id, role_id, scope_id, [], Replay.start(initial))
    recent: list[dict[str, str]] = []
    for turn in turns:
        info = runs.get(turn.turn_id) if turn.turn_id else None
        window = recent[-recent_limit:] if recent_limit else None
        out = reviewer(review_input(turn, outcome.replay.state, info, window))
        outcome.replay.apply(delta_of(out))
        outcome.records.append(record_values(turn, out, version, job_id))
        outcome.skipped += out.skipped
        outcome.memories += memory_writes(out)
        outcome.plots += plot_level(out) is not None
        outcome.fallbacks += out.fallback_reason is not None
        if recent_limit:
            recent.append({"role": "user", "content": turn.user_message})
            recent.append({"role": "assistant", "content": turn.assistant_message})
    return outcome
