"""The rule review: keyword lists, relationship delta, memory value, memory write, the facts the
user stated (:mod:`nekoflow.memory.facts`), scores, skip.

Pure logic (no I/O besides an optional AutoState read). Every rule follows SPEC "Review":
which text each keyword list reads, the exact increments, thresholds and caps.
"""

from __future__ import annotations

import logging
import re
from functools import cached_property

from pydantic import BaseModel, ConfigDict, field_validator

from nekoflow.memory.facts import extract_facts
from nekoflow.review.autostate import QUALITY_FIELDS, AutoStateCache, process_autostate
from nekoflow.review.models import (
    ChoiceLevel,
    ContinuityLevel,
    FactItem,
    MemoryItem,
    PlotUpdate,
    RelationshipDelta,
    ReviewInput,
    ReviewOutput,
    ReviewScore,
    WorldBookUpdate,
)
from nekoflow.review.timegap import elapsed_label

log = logging.getLogger(__name__)

DEFAULT_TRUST = "谢谢|感谢|信任|放心|我相信你|靠你|我懂了|我明白了|承诺|约定"
DEFAULT_AFFECTION = "喜欢|爱|想你|好想|亲爱|宝贝|心动|感动|暖|我爱"
DEFAULT_NEGATIVE = "讨厌|烦死|滚|生气|失望|算了|拜拜|再见|冷漠|无聊"

CHOICE_LEVELS = frozenset({"important", "turning_point", "ending"})
PLOT_LEVELS = CHOICE_LEVELS
WORLD_BOOK_LEVELS = frozenset({"turning_point", "ending"})
ABSENCE_LEVELS = frozenset({ContinuityLevel.days.value, ContinuityLevel.long_absence.value})
GAP_LEVELS = frozenset(
    {"short_gap", "same_day_gap", ContinuityLevel.days.value, ContinuityLevel.long_absence.value}
)

FIXED_MEMORY_VALUE = {"turning_point": 0.9, "important": 0.8, "ending": 0.95}
STORY_PROGRESS = {"normal": 0.2, "important": 0.6, "turning_point": 0.9, "ending": 1.0}
STORY_PROGRESS_NONE = 0.1
MEMORY_THRESHOLD = 0.65
SKIP_THRESHOLD = 0.3
TOTAL_DELTA_THRESHOLD = 3
TITLE_CHARS = 30
CONTENT_CHARS = 200


class ReviewKeywords(BaseModel):
    """The three keyword lists as regular expressions (searched case-insensitively)."""

    model_config = ConfigDict(frozen=True)

    trust: str = DEFAULT_TRUST
    affection: str = DEFAULT_AFFECTION
    negative: str = DEFAULT_NEGATIVE

    @field_validator("trust", "affection", "negative", mode="before")
    @classmethod
    def _join_lists(cls, v: object) -> object:
        # A list of words is accepted too; words are matched literally.
        if isinstance(v, list | tuple):
            return "|".join(re.escape(str(w)) for w in v if str(w))
        return v

    @field_validator("trust", "affection", "negative")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from exc
        return v

    @cached_property
    def trust_re(self) -> re.Pattern[str]:
        """Compiled trust pattern."""
        return re.compile(self.trust, re.IGNORECASE)

    @cached_property
    def affection_re(self) -> re.Pattern[str]:
        """Compiled affection pattern."""
        return re.compile(self.affection, re.IGNORECASE)

    @cached_property
    def negative_re(self) -> re.Pattern[str]:
        """Compiled negative pattern."""
        return re.compile(self.negative, re.IGNORECASE)


DEFAULT_KEYWORDS = ReviewKeywords()


def _hit(pattern: re.Pattern[str], text: str) -> bool:
    return bool(text) and pattern.pattern != "" and pattern.search(text) is not None


def relationship_delta(
    inp: ReviewInput, kw: ReviewKeywords = DEFAULT_KEYWORDS
) -> RelationshipDelta:
    """The six-dimension delta of one turn (always produced; familiarity ≥ 1)."""
    user, assistant = inp.user_message, inp.assistant_message
    affection = trust = 0
    familiarity = 1
    reasons: list[str] = []
    if _hit(kw.trust_re, user):
        trust += 1
        reasons.append("用户表达了信任")
    if _hit(kw.affection_re, f"{user} {assistant}"):
        affection += 1
        reasons.append("对话中出现亲密情感")
    if _hit(kw.negative_re, user):
        affection -= 1
        reasons.append("用户表达了负面情绪")
    level = inp.choice_level
    if level == ChoiceLevel.important:
        affection += 1
        trust += 1
        reasons.append("选择了 important 级剧情分支")
    elif level == ChoiceLevel.turning_point:
        affection += 2
        trust += 1
        reasons.append("选择了 turning_point 级剧情分支")
    if inp.continuity_level in ABSENCE_LEVELS:
        familiarity += 1
        reasons.append("久别重逢")
    reasons.append("日常互动")
    return RelationshipDelta(
        affection=affection,
        trust=trust,
        familiarity=familiarity,
        reason=";".join(reasons) + "。",
        conversation_id=inp.conversation_id or None,
    )


def total_delta(delta: RelationshipDelta) -> int:
    """|affection| + |trust| + familiarity — the size of the change, as SPEC defines it."""
    return abs(delta.affection) + abs(delta.trust) + delta.familiarity


def memory_value(inp: ReviewInput, kw: ReviewKeywords = DEFAULT_KEYWORDS) -> float:
    """How worth remembering this turn is (0–1).

    Choice levels have fixed values (no bonuses); otherwise length, trust/affection keywords in the
    user text and a days/long-absence gap add up, capped at 1.0.
    """
    level = inp.choice_level
    if level in FIXED_MEMORY_VALUE:
        return FIXED_MEMORY_VALUE[level]
    user = inp.user_message
    value = 0.0
    if len(user) > 100:
        value += 0.3
    elif len(user) > 50:
        value += 0.2
    if _hit(kw.trust_re, user):
        value += 0.2
    if _hit(kw.affection_re, user):
        value += 0.2
    continuity = inp.continuity_level
    if continuity == ContinuityLevel.days:
        value += 0.65
    elif continuity == ContinuityLevel.long_absence:
        value += 0.75
    return round(min(1.0, value), 6)


def should_write_memory(inp: ReviewInput, value: float, delta_total: int) -> bool:
    """value ≥ 0.65, a significant choice, total delta ≥ 3 or a days-long gap — and some text."""
    if not (inp.user_message.strip() or inp.assistant_message.strip()):
        return False
    return (
        value >= MEMORY_THRESHOLD
        or inp.choice_level in CHOICE_LEVELS
        or delta_total >= TOTAL_DELTA_THRESHOLD
        or inp.continuity_level in ABSENCE_LEVELS
    )


def _memory_title(inp: ReviewInput) -> str:
    return inp.choice_text[:TITLE_CHARS] or inp.user_message[:TITLE_CHARS] or "对话记录"


def _gap_label(inp: ReviewInput) -> str:
    """The gap's label: the given ``elapsed_label``, else one computed from ``elapsed_seconds``,
    else the continuity level's name (a hand-built context may carry only the level)."""
    rtc = inp.real_time_context
    label = rtc.get("elapsed_label")
    if label:
        return str(label)
    seconds = rtc.get("elapsed_seconds")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds >= 0:
        return elapsed_label(seconds)
    return str(inp.continuity_level)


def _memory_content(inp: ReviewInput) -> str:
    parts: list[str] = []
    if inp.continuity_level in GAP_LEVELS:
        parts.append(f"现实时间间隔:{_gap_label(inp)}")
    parts.append(f"用户:{inp.user_message[:CONTENT_CHARS]}")
    parts.append(f"角色:{inp.assistant_message[:CONTENT_CHARS]}")
    return "\n".join(parts)


def memory_item(inp: ReviewInput, value: float) -> MemoryItem:
    """The single memory a rule review writes."""
    level = inp.choice_level
    mem_type = {"important": "relationship", "turning_point": "event"}.get(level or "", "short")
    long_lived = level in ("turning_point", "ending") or value >= 0.8
    return MemoryItem(
        target="user",
        mem_type=mem_type,
        title=_memory_title(inp),
        content=_memory_content(inp),
        importance=value,
        ttl="long" if long_lived else "short",
    )


def stated_facts(inp: ReviewInput) -> list[FactItem]:
    """The facts the user's message states about the user (questions state nothing)."""
    return [
        FactItem(slot=f.slot, value=f.value, sentence=f.sentence[:500], change=f.change)
        for f in extract_facts(inp.user_message)
    ]


def plot_update(inp: ReviewInput) -> PlotUpdate | None:
    """A plot-node suggestion for important, turning-point and ending choices."""
    level = inp.choice_level
    if level not in PLOT_LEVELS:
        return None
    title = inp.choice_text[:TITLE_CHARS] or inp.user_message[:TITLE_CHARS] or "剧情节点"
    summary = f"用户选择:{inp.choice_text}" if inp.choice_text else f"用户:{inp.user_message}"
    if inp.assistant_message:
        summary += f"\n角色:{inp.assistant_message[:CONTENT_CHARS]}"
    return PlotUpdate(should_create_node=True, level=level, title=title, summary=summary)


def world_book_update(inp: ReviewInput) -> WorldBookUpdate | None:
    """A world-book suggestion for turning-point and ending choices."""
    level = inp.choice_level
    if level not in WORLD_BOOK_LEVELS:
        return None
    title = inp.choice_text[:TITLE_CHARS] or inp.user_message[:TITLE_CHARS] or "剧情事件"
    content = _memory_content(inp)
    return WorldBookUpdate(
        should_update=True,
        reason=f"剧情选择达到 {level} 级别,世界状态可能已改变",
        entry_title=title,
        entry_content=content,
    )


def user_engagement(user_message: str) -> float:
    """0.9 / 0.7 / 0.5 / 0.3 by user message length (> 200 / > 80 / > 30 / else)."""
    n = len(user_message)
    if n > 200:
        return 0.9
    if n > 80:
        return 0.7
    if n > 30:
        return 0.5
    return 0.3


def scores(
    inp: ReviewInput,
    value: float,
    delta_total: int,
    autostate: AutoStateCache | None,
) -> ReviewScore:
    """The eight scores: four from the rules, four from AutoState (0.0 when absent)."""
    level = inp.choice_level
    quality: dict[str, float] = {}
    if autostate is not None:
        try:
            quality = autostate.get(inp.character_id, inp.user_id, inp.conversation_id) or {}
        except Exception:  # an unreachable cache means "no evaluation yet", not a failed review
            log.warning("AutoState unavailable; quality scores default to 0.0", exc_info=True)
    return ReviewScore(
        memory_value=value,
        story_progress=STORY_PROGRESS.get(level or "", STORY_PROGRESS_NONE),
        relationship_progress=min(1.0, delta_total / 5),
        user_engagement=user_engagement(inp.user_message),
        **{k: _quality(quality, k) for k in QUALITY_FIELDS},
    )


def _quality(quality: object, key: str) -> float:
    """One cached quality score clamped to 0–1; anything unusable (None, text, NaN) is 0.0."""
    value = quality.get(key) if isinstance(quality, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return 0.0
    try:
        number = float(value)
    except ValueError:
        return 0.0
    if number != number:  # NaN
        return 0.0
    return min(1.0, max(0.0, number))


def run_rule_review(
    inp: ReviewInput | dict,
    *,
    keywords: ReviewKeywords | None = None,
    autostate: AutoStateCache | None = None,
) -> ReviewOutput:
    """Review one turn by rules alone (no LLM call).

    ``inp`` may be a :class:`ReviewInput` or a dict of its fields. Quality scores come from
    ``autostate`` or, when omitted, the process-wide in-memory AutoState cache.
    """
    if not isinstance(inp, ReviewInput):
        inp = ReviewInput.model_validate(inp)
    kw = keywords or DEFAULT_KEYWORDS
    cache = autostate if autostate is not None else process_autostate()

    delta = relationship_delta(inp, kw)
    dtotal = total_delta(delta)
    value = memory_value(inp, kw)
    write = should_write_memory(inp, value, dtotal)
    facts = stated_facts(inp)
    skipped = (
        inp.choice_level is None
        and value < SKIP_THRESHOLD
        and inp.continuity_level not in ABSENCE_LEVELS
        and not write
        and not facts
    )
    return ReviewOutput(
        should_write_memory=write,
        memory_items=[memory_item(inp, value)] if write else [],
        facts=facts,
        relationship_delta=delta,
        plot_update=plot_update(inp),
        world_book_update=world_book_update(inp),
        scores=scores(inp, value, dtotal, cache),
        source="rule",
        skipped=skipped,
    )
