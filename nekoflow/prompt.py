"""PromptStack: named, prioritized system-prompt sections rendered in priority order.

``add(key, content, priority=100, scope="session", *, role="system")`` registers a section
(blank content is ignored, the same key replaces the previous section in place);
``render(base)`` returns ``base`` followed by each section as ``"## {key}\\n{content}"`` in
ascending priority (ties keep insertion order), joined by blank lines. Surrounding whitespace of
``base`` and of each content is dropped when rendering (as the seed's stack does), so the parts
are always separated by exactly one blank line; a blank ``base`` is left out. ``scope`` says how
long a section lives: ``"turn"`` sections are dropped by :meth:`PromptStack.end_turn` (or
``clear_scope("turn")``), ``"session"``/``"global"`` ones stay. ``role`` (``"system"`` or
``"developer"``, as in the seed's stack) is kept on the item for callers that split the prompt
by role; :meth:`render` joins every section regardless.

The seed's stack also named some priorities after the character (``PRIORITY_CHARACTER_STATE``,
``PRIORITY_CHARACTER_RELATIONSHIP``, ``PRIORITY_CHARACTER_MEMORIES``); those names are kept as
aliases of the SPEC's constants with the SPEC's values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from nekoflow.errors import InputError

Scope = Literal["global", "session", "turn"]
SCOPES: tuple[str, ...] = ("global", "session", "turn")
Role = Literal["system", "developer"]
ROLES: tuple[str, ...] = ("system", "developer")


@dataclass(frozen=True, slots=True)
class PromptItem:
    """One registered section of the prompt."""

    key: str
    content: str
    priority: int
    scope: str
    role: str = "system"


class PromptStack:
    """An ordered set of prompt sections keyed by name (see the module docstring)."""

    PRIORITY_SAFETY: ClassVar[int] = 10
    PRIORITY_BEHAVIOR: ClassVar[int] = 20
    PRIORITY_CHARACTER_PROFILE: ClassVar[int] = 30
    PRIORITY_RUNTIME_STATE: ClassVar[int] = 40
    PRIORITY_REAL_TIME_CONTINUITY: ClassVar[int] = 41
    PRIORITY_RELATIONSHIP: ClassVar[int] = 50
    PRIORITY_REACTION_PLAN: ClassVar[int] = 55
    PRIORITY_MEMORIES: ClassVar[int] = 60
    PRIORITY_WORLD_BOOK: ClassVar[int] = 65
    PRIORITY_KNOWLEDGE_RAG: ClassVar[int] = 70
    PRIORITY_TOOL_INSTRUCTIONS: ClassVar[int] = 80
    DEFAULT_PRIORITY: ClassVar[int] = 100

    # The seed's names for the same slots.
    PRIORITY_CHARACTER_STATE: ClassVar[int] = PRIORITY_RUNTIME_STATE
    PRIORITY_CHARACTER_RUNTIME_STATE: ClassVar[int] = PRIORITY_RUNTIME_STATE
    PRIORITY_CHARACTER_RELATIONSHIP: ClassVar[int] = PRIORITY_RELATIONSHIP
    PRIORITY_CHARACTER_REACTION_PLAN: ClassVar[int] = PRIORITY_REACTION_PLAN
    PRIORITY_CHARACTER_MEMORIES: ClassVar[int] = PRIORITY_MEMORIES

    def __init__(self) -> None:
        self._items: dict[str, PromptItem] = {}

    def add(
        self,
        key: str,
        content: str,
        priority: int = DEFAULT_PRIORITY,
        scope: Scope = "session",
        *,
        role: Role = "system",
    ) -> None:
        """Register (or replace) section ``key``; blank ``content`` is ignored."""
        if not isinstance(key, str) or not key.strip():
            raise InputError("prompt section key must be a non-empty string", field="key")
        if not isinstance(content, str):
            raise InputError(f"content of prompt section {key!r} must be a string", field="content")
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise InputError(f"priority of prompt section {key!r} must be an int", field="priority")
        if scope not in SCOPES:
            raise InputError(
                f"scope of prompt section {key!r} must be one of {', '.join(SCOPES)}, "
                f"got {scope!r}",
                field="scope",
            )
        if role not in ROLES:
            raise InputError(
                f"role of prompt section {key!r} must be one of {', '.join(ROLES)}, got {role!r}",
                field="role",
            )
        if not content.strip():
            return
        self._items[key] = PromptItem(
            key=key, content=content, priority=priority, scope=scope, role=role
        )

    def get(self, key: str) -> PromptItem | None:
        """The section registered under ``key``, if any."""
        return self._items.get(key)

    def remove(self, key: str) -> bool:
        """Drop section ``key``; False when it was not there."""
        return self._items.pop(key, None) is not None

    def end_turn(self) -> None:
        """Drop every ``"turn"``-scoped section (call after the turn's prompt was rendered)."""
        self._items = {k: v for k, v in self._items.items() if v.scope != "turn"}

    def clear_scope(self, scope: str) -> int:
        """Drop every section of ``scope``; returns how many were dropped."""
        before = len(self._items)
        self._items = {k: v for k, v in self._items.items() if v.scope != scope}
        return before - len(self._items)

    @property
    def keys(self) -> list[str]:
        """The registered keys, in insertion order."""
        return list(self._items)

    def items(self) -> list[PromptItem]:
        """The sections in render order (ascending priority, then insertion order)."""
        return sorted(self._items.values(), key=lambda item: item.priority)

    def render(self, base: str = "") -> str:
        """``base`` then every section as ``## {key}\\n{content}``, joined by blank lines."""
        if base is not None and not isinstance(base, str):
            raise InputError("base prompt must be a string", field="base")
        parts = [base.strip()] if base and base.strip() else []
        parts.extend(f"## {item.key}\n{item.content.strip()}" for item in self.items())
        return "\n\n".join(parts)

    def render_debug(self) -> list[dict[str, object]]:
        """The sections in render order as dicts (key, content cut at 200 chars + "...",
        priority, role, scope) — what this turn injected, for logs and debugging."""
        return [
            {
                "key": item.key,
                "content": item.content[:200] + "..." if len(item.content) > 200 else item.content,
                "priority": item.priority,
                "role": item.role,
                "scope": item.scope,
            }
            for item in self.items()
        ]

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)
