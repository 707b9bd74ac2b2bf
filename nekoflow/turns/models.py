"""What each stage of a turn stores as its result (JSON in ``turn_stage``), as pydantic models."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore")


class DispatchResult(_Result):
    """Who answers and where: the character, its save in this scope, and the time gap."""

    role_id: int
    role_name: str
    save_id: int
    scope_id: str
    user_id: str = ""
    group_id: str = ""
    display_name: str = ""
    sent_at: datetime | None = None
    real_time: dict[str, Any] = Field(default_factory=dict)


class InjectedEntry(_Result):
    """A world-book entry injected into this turn's prompt."""

    id: str
    name: str
    sources: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    score: int = 0


class BeforeTurnResult(_Result):
    """The rendered system prompt and what went into it."""

    system_prompt: str
    injected: list[InjectedEntry] = Field(default_factory=list)
    memories: int = 0
    relationship: dict[str, int] = Field(default_factory=dict)


class LLMCallResult(_Result):
    """The model's reply and what the server reported about it."""

    text: str
    model: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float = 0.0
    finish_reason: str | None = None
    attempts: int = 1


class MemoryBuildResult(_Result):
    """The dialogue-tree lines this turn wrote, and the reply as segments."""

    line_ids: list[int] = Field(default_factory=list)
    segments: list[dict[str, Any]] = Field(default_factory=list)
    reply_text: str = ""


class ApplyResult(_Result):
    """What apply_deltas changed."""

    relationship: dict[str, int] = Field(default_factory=dict)
    memories: int = 0
    plot_nodes: int = 0
    world_book_suggestions: int = 0
    applied: bool = True
