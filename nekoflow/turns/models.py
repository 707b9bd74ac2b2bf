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
    #: ``on_busy = merge``: the later messages merged into this turn, frozen when it started:
    #: ``{"request": <ChatRequest>, "sent_at": <iso time>}`` each, in arrival order.
    merged: list[dict[str, Any]] = Field(default_factory=list)


class InjectedEntry(_Result):
    """A world-book entry injected into this turn's prompt."""

    id: str
    name: str
    sources: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    score: int = 0


class DroppedLore(_Result):
    """A world-book entry whose keys matched but that stayed out of this turn's prompt, and why
    (ids, the reason and budget figures only: never content)."""

    id: str
    book_id: str = ""
    #: A :data:`~nekoflow.worldbook.models.DropReason`, or ``sections`` when the entry was
    #: recalled but its section did not fit the prompt's lore characters.
    reason: str
    needed: int | None = None
    available: int | None = None
    unit: str = ""
    budget: str = ""


class BeforeTurnResult(_Result):
    """The rendered system prompt and what went into it."""

    system_prompt: str
    #: Inserts into the chat (``DepthInsert`` fields: depth, role, content, order): lore at a
    #: depth and the character card's note (``depth_prompt``).
    depth_inserts: list[dict[str, Any]] = Field(default_factory=list)
    #: The card's ``post_history_instructions``, macros rendered: the last message sent.
    post_history: str = ""
    #: How many example dialogues of the card are in the system prompt.
    examples: int = 0
    injected: list[InjectedEntry] = Field(default_factory=list)
    #: The matched entries that did not reach the prompt, with the reason for each.
    dropped: list[DroppedLore] = Field(default_factory=list)
    memories: int = 0
    #: The memories and summaries in the prompt: ``{id, kind, score, relevance, importance,
    #: recency}`` (ids and numbers, never text).
    memory_refs: list[dict[str, Any]] = Field(default_factory=list)
    #: How many of the newest dialogue lines the token-sized history window holds (None: a
    #: result stored before the window was sized by tokens, which held ``history_limit``).
    history_lines: int | None = None
    #: The dialogue reaches past the window: older lines are only in summaries.
    history_beyond: bool = False
    relationship: dict[str, int] = Field(default_factory=dict)
    #: The card's greeting, delivered before this turn's reply (the conversation's first
    #: answered turn on its platform); None: nothing to deliver first.
    greeting: str | None = None


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
    #: What consolidation did with the review's memories: added, updated, unchanged (NOOP),
    #: superseded (old facts a contradiction replaced).
    memory_ops: dict[str, int] = Field(default_factory=dict)
    plot_nodes: int = 0
    world_book_suggestions: int = 0
    applied: bool = True
    #: The scope's history outgrew the window: a summary task was due after this turn.
    summarize: bool = False
