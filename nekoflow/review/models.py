"""Review input/output models (seed ``review-models.md``), pydantic v2 and validated.

Scores are floats in 0–1; ``target``, ``mem_type``, ``ttl`` and plot ``level`` are closed sets, so
a bad value is a :class:`pydantic.ValidationError` that names the field.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)


class ChoiceLevel(StrEnum):
    """How much a plot choice matters: drives plot nodes, memory value and relationship bonuses."""

    normal = "normal"
    important = "important"
    turning_point = "turning_point"
    ending = "ending"


class ContinuityLevel(StrEnum):
    """How long the user was away since the previous turn (see ``real_time_context``)."""

    first_contact = "first_contact"
    continuous = "continuous"
    short_gap = "short_gap"
    same_day_gap = "same_day_gap"
    days = "days"
    long_absence = "long_absence"


_SCORE = Field(default=0.0, ge=0.0, le=1.0)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_enum_values=True)


class ReviewScore(_Model):
    """Eight 0–1 quality dimensions of one turn.

    memory_value, story_progress, relationship_progress and user_engagement come from the rules;
    character_fidelity, immersion, world_consistency and risk from the AutoState cache (LLM review).
    """

    character_fidelity: float = _SCORE
    immersion: float = _SCORE
    relationship_progress: float = _SCORE
    story_progress: float = _SCORE
    memory_value: float = _SCORE
    world_consistency: float = _SCORE
    user_engagement: float = _SCORE
    risk: float = _SCORE


class MemoryItem(_Model):
    """One memory the review suggests writing."""

    target: Literal["user", "character", "world"] = "user"
    mem_type: Literal["short", "long", "relationship", "event"] = "short"
    title: str = ""
    content: str = ""
    importance: float = Field(default=0.0, ge=0.0, le=1.0)
    ttl: Literal["short", "long", "permanent"] = "short"
    #: The LLM review's consolidation decision against a memory it was shown
    #: (``ReviewInput.memories``): ``UPDATE`` it to this content, ``DELETE`` it (this one
    #: contradicts and replaces it), ``NOOP`` (already known), ``ADD``. None: the rules decide.
    op: Literal["ADD", "UPDATE", "DELETE", "NOOP"] | None = None
    #: The id of the shown memory ``op`` is about (UPDATE, DELETE, NOOP).
    memory_id: int | None = None


class FactItem(_Model):
    """A fact the user stated about themselves: a slot (``user.name``, ``user.pet.cat.name``),
    the value alone and the sentence it came from; ``change`` when it replaces an older value."""

    slot: str = Field(min_length=6, max_length=120, pattern=r"^user\.[^\s:][^:\n]*$")
    value: str = Field(min_length=1, max_length=200)
    sentence: str = Field(default="", max_length=500)
    change: bool = False

    @field_validator("value", "sentence", mode="before")
    @classmethod
    def _trimmed(cls, v: Any) -> Any:
        return " ".join(v.split()) if isinstance(v, str) else v


RELATIONSHIP_DIMENSIONS: tuple[str, ...] = (
    "affection",
    "trust",
    "familiarity",
    "dependency",
    "security",
    "jealousy",
)
"""The six relationship dimensions, in display order."""


def clamp_dimension(value: int) -> int:
    """Relationship values live in 0–100 (the live apply and the re-review replay both clamp)."""
    return max(0, min(100, int(value)))


class RelationshipDelta(_Model):
    """Change of the six relationship dimensions caused by one turn."""

    affection: int = 0
    trust: int = 0
    familiarity: int = 0
    dependency: int = 0
    security: int = 0
    jealousy: int = 0
    reason: str = ""
    source: str = "review_pipeline"
    plot_node_id: str | None = None
    conversation_id: str | None = None

    @field_validator("plot_node_id", "conversation_id", mode="before")
    @classmethod
    def _ids_as_text(cls, v: Any) -> Any:
        # Plot-node and conversation ids are often integer primary keys; keep them as text.
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    def as_dict(self) -> dict[str, int]:
        """The six dimension deltas only."""
        return {d: getattr(self, d) for d in RELATIONSHIP_DIMENSIONS}


class PlotUpdate(_Model):
    """Suggestion to create a plot node for this turn."""

    should_create_node: bool = False
    level: ChoiceLevel = ChoiceLevel.normal
    summary: str = ""
    title: str = ""


class WorldBookUpdate(_Model):
    """Suggestion to add or update a world-book entry (stored for a human to accept)."""

    should_update: bool = False
    reason: str = ""
    entry_title: str = ""
    entry_content: str = ""


class ReviewInput(_Model):
    """Everything the review needs about one turn.

    ``ai_reply`` is accepted as an alias of ``assistant_message`` (the seed uses both);
    ``selected_choice["level"]`` and ``real_time_context["continuity_level"]`` are validated.
    ``real_time_context`` may also be a :class:`RealTimeContext`; None for any of the optional
    dict/list fields means empty.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    conversation_id: str = ""
    character_id: str = ""
    user_id: str = ""
    group_id: str | None = None
    user_message: str = ""
    assistant_message: str = Field(
        default="", validation_alias=AliasChoices("assistant_message", "ai_reply")
    )
    recent_messages: list[dict[str, Any]] = Field(default_factory=list)
    active_plot_node: dict[str, Any] | None = None
    selected_choice: dict[str, Any] | None = None
    relationship_state: dict[str, Any] = Field(default_factory=dict)
    character_state: dict[str, Any] = Field(default_factory=dict)
    world_context: dict[str, Any] = Field(default_factory=dict)
    real_time_context: dict[str, Any] = Field(default_factory=dict)
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    turn_context: dict[str, Any] = Field(default_factory=dict)
    #: The scope's memories that went into this turn's prompt (``{"id", "title", "content"}``),
    #: so an LLM review can decide how a new memory relates to them.
    memories: list[dict[str, Any]] = Field(default_factory=list)

    @field_validator("conversation_id", "character_id", "user_id", "group_id", mode="before")
    @classmethod
    def _ids_as_text(cls, v: Any) -> Any:
        # Platform ids are often numbers (QQ uin, Telegram chat id); store them as text.
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @field_validator(
        "recent_messages",
        "relationship_state",
        "character_state",
        "world_context",
        "tool_calls",
        "turn_context",
        "memories",
        mode="before",
    )
    @classmethod
    def _none_is_empty(cls, v: Any, info: ValidationInfo) -> Any:
        # Callers pass optional turn-context parts straight through (the seed's
        # ``real_time_context=turn_context.real_time_context``); None means "nothing known".
        if v is None:
            return [] if info.field_name in ("recent_messages", "tool_calls", "memories") else {}
        return v

    @field_validator("selected_choice")
    @classmethod
    def _check_choice(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is None:
            return None
        level = v.get("level")
        # isinstance first: an unhashable level (a list, a dict) must be a ValidationError too,
        # not the TypeError of a membership test.
        if level is not None and not (isinstance(level, str) and level in ChoiceLevel.__members__):
            raise ValueError(
                f"selected_choice.level must be one of {', '.join(ChoiceLevel)}; got {level!r}"
            )
        text = v.get("text")
        if text is not None and not isinstance(text, str):
            raise ValueError("selected_choice.text must be a string")
        return v

    @field_validator("real_time_context", mode="before")
    @classmethod
    def _check_time(cls, v: Any) -> Any:
        if v is None:
            return {}
        if isinstance(v, BaseModel):
            v = v.model_dump(mode="json")
        if isinstance(v, dict):
            level = v.get("continuity_level")
            if level is not None and not (
                isinstance(level, str) and level in ContinuityLevel.__members__
            ):
                raise ValueError(
                    "real_time_context.continuity_level must be one of "
                    f"{', '.join(ContinuityLevel)}; got {level!r}"
                )
        return v

    @property
    def choice_level(self) -> str | None:
        """The selected plot choice's level, or None when there was no choice."""
        if not self.selected_choice:
            return None
        return self.selected_choice.get("level")

    @property
    def choice_text(self) -> str:
        """The selected plot choice's text ('' when none)."""
        if not self.selected_choice:
            return ""
        return self.selected_choice.get("text") or ""

    @property
    def continuity_level(self) -> str | None:
        """The real-time continuity level, when known."""
        return self.real_time_context.get("continuity_level")


class ReviewOutput(_Model):
    """The structured result of reviewing one turn.

    ``fallback_reason`` is set when the LLM review failed and the rule review answered instead.
    """

    should_write_memory: bool = False
    memory_items: list[MemoryItem] = Field(default_factory=list)
    #: Facts the user stated about themselves (stored as long-term memories by slot, whatever
    #: ``should_write_memory`` says); absent in older outputs.
    facts: list[FactItem] = Field(default_factory=list)
    relationship_delta: RelationshipDelta | None = None
    plot_update: PlotUpdate | None = None
    world_book_update: WorldBookUpdate | None = None
    scores: ReviewScore | None = None
    source: Literal["rule", "llm"] = "rule"
    skipped: bool = False
    fallback_reason: str | None = None
