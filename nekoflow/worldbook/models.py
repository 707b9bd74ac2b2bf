"""World-book data models (seed ``world-book.md``): entries, books, recall context/config, results.

All are pydantic v2 models with the seed's field names and defaults. Closed sets (trigger sources,
match modes) are validated, so a bad value is a ``ValidationError`` naming the field. ``entry_type``
is open: the nine seed types rank as in :data:`ENTRY_TYPE_PRIORITY`, any other type (SPEC:
"unknown 0") is accepted and ranks 0.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from nekoflow.worldbook.rules import BookRules, EntryRules, Tracked, edit_generation

TriggerSource = Literal["user", "assistant_recent", "history", "scene_state"]
#: The seed's entry types; ``entry_type`` also accepts others, which rank 0 when sorting.
EntryType = Literal[
    "relationship", "rule", "location", "event", "npc", "faction", "lore", "style", "secret"
]
MatchMode = Literal["any", "all"]

#: Base score of each trigger source; ``always`` is the score of an ``always_on`` entry.
SOURCE_SCORES: dict[str, int] = {
    "user": 50,
    "scene_state": 45,
    "assistant_recent": 30,
    "history": 20,
    "always": 100,
}

#: Label used in ``WorldBookMatchResult.trigger_sources`` for an ``always_on`` entry.
ALWAYS_SOURCE = "always"

#: Sort rank of each entry type (higher sorts first among equal score and priority); any other
#: entry type ranks 0 (``ENTRY_TYPE_PRIORITY.get(entry_type, 0)``).
ENTRY_TYPE_PRIORITY: dict[str, int] = {
    "relationship": 90,
    "rule": 80,
    "location": 70,
    "event": 60,
    "npc": 50,
    "faction": 45,
    "lore": 40,
    "style": 35,
    "secret": 30,
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


__all__ = ["edit_generation"]


class _WithRules(Tracked):
    """A model whose ``rules`` are left out of dumps while they are all defaults (seed shape)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    @model_serializer(mode="wrap")
    def _drop_default_rules(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if isinstance(data, dict) and data.get("rules") is not None:
            rules = getattr(self, "rules", None)
            if rules is not None and not rules.model_dump(exclude_defaults=True):
                del data["rules"]
        return data


class WorldBookEntry(_WithRules):
    """One world-book entry: keywords (and/or scene triggers) that inject ``content`` when hit."""

    id: str = ""
    name: str = ""
    keywords: list[str] = Field(default_factory=list)
    content: str = ""
    enabled: bool = True
    priority: int = 0
    case_sensitive: bool = False
    match_mode: MatchMode = "any"
    trigger_sources: list[TriggerSource] = Field(default_factory=lambda: ["user"])
    always_on: bool = False
    state_triggers: dict[str, list[str]] = Field(default_factory=dict)
    cooldown_turns: int = Field(default=0, ge=0)
    max_injections_per_session: int = Field(default=0, ge=0)
    tags: list[str] = Field(default_factory=list)
    entry_type: str = "lore"
    weight: int = 0
    created_at: str = ""
    updated_at: str = ""
    #: SillyTavern-grade rules (secondary keys, regex, recursion, timing, placement…).
    rules: EntryRules = Field(default_factory=EntryRules)

    @field_validator("state_triggers", mode="before")
    @classmethod
    def _scalar_trigger_to_list(cls, value: Any) -> Any:
        """Accept ``{"location": "白塔"}`` as shorthand for ``{"location": ["白塔"]}``."""
        if isinstance(value, dict):
            return {k: [v] if isinstance(v, str) else v for k, v in value.items()}
        return value


class WorldBook(_WithRules):
    """A named set of entries, optionally bound to characters (by id or name; empty = global)."""

    id: str = ""
    name: str = ""
    description: str = ""
    character_ids: list[str] = Field(default_factory=list)
    entries: list[WorldBookEntry] = Field(default_factory=list)
    enabled: bool = True
    created_at: str = ""
    updated_at: str = ""
    #: Scan depth, token budget, recursion and the file's kept fields (World Info settings).
    rules: BookRules = Field(default_factory=BookRules)

    # Set by the SQL store on load; it changes on every write, so it versions the automaton cache.
    _revision: str | None = PrivateAttr(default=None)
    # (entries list id, length, edit generation) → fingerprint, for large books built in code.
    _fingerprint_memo: tuple[Any, Any] | None = PrivateAttr(default=None)

    @field_validator("entries", mode="before")
    @classmethod
    def _entries_mapping_to_list(cls, value: Any) -> Any:
        """Accept the seed's ``world_books.json`` shape ``{"<entry_id>": {...}}`` for ``entries``.

        The mapping keeps its order; an entry without an ``id`` takes its key. (A given ``id``
        that differs from its key is kept as is here; the ``world_books.json`` importer reports
        such a file as inconsistent.)
        """
        if not isinstance(value, dict):
            return value
        out = []
        for key, item in value.items():
            if isinstance(item, dict) and not item.get("id"):
                item = {**item, "id": str(key)}
            out.append(item)
        return out

    def __eq__(self, other: object) -> bool:
        """Books are equal when their fields are (the store's private revision is ignored)."""
        if not isinstance(other, WorldBook):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]


class WorldBookRecallContext(_Model):
    """Everything one turn's recall may look at: the user message, recent chat, scene state."""

    latest_user_message: str = ""
    recent_messages: list[dict[str, Any]] = Field(default_factory=list)
    assistant_recent_text: str = ""
    history_text: str = ""
    scene: dict[str, Any] = Field(default_factory=dict)
    active_entry_ids: list[str] = Field(default_factory=list)
    character_id: str = ""
    target_id: str = ""
    scope_id: str = ""
    #: Seeds probability and inclusion-group draws, so a retried turn picks the same entries.
    turn_id: str = ""


class WorldBookRecallConfig(_Model):
    """Recall limits: text windows, the four character budgets, max entries, assistant guards."""

    recent_message_limit: int = Field(default=6, ge=0)
    max_history_chars: int = Field(default=2000, ge=0)
    max_total_chars: int = Field(default=3000, ge=0)
    max_entries: int = Field(default=8, ge=0)
    max_always_chars: int = Field(default=800, ge=0)
    max_scene_chars: int = Field(default=1000, ge=0)
    max_keyword_chars: int = Field(default=1200, ge=0)
    max_assistant_triggered_entries: int = Field(default=3, ge=0)
    min_assistant_priority: int = 20
    enable_assistant_trigger: bool = True
    enable_history_trigger: bool = True
    enable_scene_trigger: bool = True
    enable_cooldown: bool = True
    #: Token budget of all lore together (0 = none; a turn derives it from the context window).
    max_total_tokens: int = Field(default=0, ge=0)
    #: How many rounds of recursion (entry content activating entries) a book may run.
    max_recursion_steps: int = Field(default=3, ge=0)
    #: An entry longer than its whole budget: "skip" it (the seed), or "cut" it to the budget
    #: when it is first in line (nothing else taken from that budget yet).
    oversize: Literal["skip", "cut"] = "skip"
    #: Time limit of one regex key search, in seconds (a timeout counts as no match).
    regex_timeout: float = Field(default=0.05, gt=0)


class WorldBookMatchResult(_Model):
    """One recalled entry: which sources fired, which keywords matched, and its score.

    ``trigger_sources`` holds ``"always"`` for an ``always_on`` entry.
    """

    entry: WorldBookEntry
    trigger_sources: list[str] = Field(default_factory=list)
    matched_keywords: list[str] = Field(default_factory=list)
    score: int = 0
    #: Set when the entry was cut to fit its budget: the number of content characters kept.
    cut_to: int | None = None

    @property
    def content(self) -> str:
        """The entry's content as it goes into the prompt (cut when ``cut_to`` is set)."""
        text = self.entry.content
        return text if self.cut_to is None else text[: self.cut_to]


DropReason = Literal[
    "over_budget",
    "max_entries",
    "cooldown",
    "delay",
    "probability",
    "group_lost",
    "session_cap",
    "blank",
]


class DroppedEntry(_Model):
    """An entry whose keys matched but that did not reach the prompt, and why."""

    entry_id: str
    entry_name: str = ""
    book_id: str = ""
    book_name: str = ""
    reason: DropReason
    #: For ``over_budget``: the budget the entry needs (chars or tokens, see ``unit``).
    needed: int | None = None
    available: int | None = None
    unit: Literal["chars", "tokens", ""] = ""
    budget: str = ""
