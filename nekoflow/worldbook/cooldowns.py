"""Per-session cooldowns and injection caps: the ``Cooldowns`` interface and its in-process store.

Model (per ``scope_id``, i.e. per conversation scope):

* every committed turn advances the scope's turn counter by one — with or without injections —
  via ``record(scope_id, turn_id, injected)``; the same ``turn_id`` recorded twice counts once
  (a retried Celery task never double-counts);
* for each injected entry id the store keeps the turn number of its last injection and how many
  times it was injected.

Before matching, ``snapshot(scope_id)`` returns a :class:`CooldownState` (plain data, JSON-able, so
it can travel between Celery tasks). The upcoming turn is ``state.turn + 1``; an entry with
``cooldown_turns = N`` last injected in turn ``t`` is blocked while ``upcoming - t <= N`` (turns
``t+1 … t+N``), and an entry with ``max_injections_per_session = K > 0`` is blocked once injected
``K`` times. State is keyed by entry id: entries without an id are never blocked.

SillyTavern's timed effects (``entry.rules``), per scope and in committed turns:

* ``sticky = S``: an entry freshly activated in turn ``a`` (``activated``) stays active in turns
  ``a+1 … a+S`` without its keys, skipping cooldown and probability. ``record(…, fresh=…)`` names
  the injected entries that were activated afresh; entries carried by sticky are not, so the
  sticky window is counted from the fresh activation. Cooldown counts from the last injection,
  i.e. it starts when the sticky window ends (SillyTavern's order);
* ``delay = D``: the entry may not fire before the scope has ``D`` committed turns.

The turn pipeline uses it like this::

    state = cooldowns.snapshot(scope_id)                       # before_turn
    results = match_entries_v2(ctx, books, cooldowns=state)     # pure
    ...                                                        # LLM call, review, …
    cooldowns.record(scope_id, turn_id, [r.entry for r in results])   # at turn commit

:class:`InMemoryCooldowns` serves the embedded (single process) mode;
``nekoflow.worldbook.redis_cooldowns.RedisCooldowns`` serves workers sharing Redis.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from nekoflow.errors import InputError
from nekoflow.worldbook.models import WorldBookEntry, WorldBookMatchResult

#: What ``record`` accepts as "the injected entries": entries, match results or entry ids.
Injected = WorldBookEntry | WorldBookMatchResult | str

DEFAULT_REMEMBERED_TURNS = 1000


class CooldownState(BaseModel):
    """A scope's cooldown counters at one moment: turns, last injection and count per entry."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turn: int = Field(default=0, ge=0)
    last_injected: dict[str, int] = Field(default_factory=dict)
    injections: dict[str, int] = Field(default_factory=dict)
    #: Turn of each entry's last fresh (not sticky-carried) activation.
    activated: dict[str, int] = Field(default_factory=dict)

    def blocks(self, entry: WorldBookEntry) -> bool:
        """True when ``entry`` may not fire in the upcoming turn (cooldown, cap or delay)."""
        return self.block_reason(entry) is not None

    def block_reason(self, entry: WorldBookEntry) -> str | None:
        """``session_cap``, ``delay`` or ``cooldown`` when ``entry`` may not fire, else None."""
        if entry.rules.delay > 0 and self.turn < entry.rules.delay:
            return "delay"
        if not entry.id:
            return None
        if entry.max_injections_per_session > 0 and (
            self.injections.get(entry.id, 0) >= entry.max_injections_per_session
        ):
            return "session_cap"
        if entry.cooldown_turns > 0:
            last = self.last_injected.get(entry.id)
            if last is not None and (self.turn + 1) - last <= entry.cooldown_turns:
                return "cooldown"
        return None

    def sticky(self, entry: WorldBookEntry) -> bool:
        """True when ``entry`` is inside its sticky window in the upcoming turn."""
        if entry.rules.sticky <= 0 or not entry.id:
            return False
        start = self.activated.get(entry.id)
        return start is not None and (self.turn + 1) - start <= entry.rules.sticky

    def blocked_ids(self, entries: Iterable[WorldBookEntry]) -> set[str]:
        """Ids of the given entries that are blocked in the upcoming turn."""
        return {e.id for e in entries if self.blocks(e)}


@runtime_checkable
class Cooldowns(Protocol):
    """Where cooldown counters live; implementations must make ``record`` idempotent per turn."""

    def snapshot(self, scope_id: str) -> CooldownState:
        """The scope's counters now (an empty state for an unknown scope)."""
        ...

    def record(
        self,
        scope_id: str,
        turn_id: str,
        injected: Iterable[Injected],
        *,
        fresh: Iterable[Injected] | None = None,
    ) -> bool:
        """Count a committed turn and its injections; False if ``turn_id`` was already counted.

        ``fresh``: the injected entries activated afresh (their sticky window starts now);
        None: none (callers that use sticky entries pass it).
        """
        ...


def blocked_ids(cooldowns: Cooldowns, scope_id: str, entries: Iterable[WorldBookEntry]) -> set[str]:
    """Which of ``entries`` are blocked for ``scope_id`` in its upcoming turn."""
    return cooldowns.snapshot(scope_id).blocked_ids(entries)


def injected_ids(injected: Iterable[Injected]) -> list[str]:
    """Distinct, non-empty entry ids of ``injected``, in order (raises ``InputError`` on junk)."""
    out: dict[str, None] = {}
    for item in injected:
        if isinstance(item, WorldBookMatchResult):
            entry_id = item.entry.id
        elif isinstance(item, WorldBookEntry):
            entry_id = item.id
        elif isinstance(item, str):
            entry_id = item
        else:
            raise InputError(
                f"injected entries must be WorldBookEntry, WorldBookMatchResult or str ids, "
                f"got {type(item).__name__}",
                field="injected",
            )
        if entry_id:
            out[entry_id] = None
    return list(out)


def check_ids(scope_id: str, turn_id: str) -> None:
    """Reject empty scope or turn ids (they would merge unrelated sessions or turns)."""
    if not isinstance(scope_id, str) or not scope_id:
        raise InputError("scope_id must be a non-empty string", field="scope_id")
    if not isinstance(turn_id, str) or not turn_id:
        raise InputError("turn_id must be a non-empty string", field="turn_id")


class _Scope:
    __slots__ = (
        "activated",
        "injections",
        "last_injected",
        "recent_turn_ids",
        "seen_turn_ids",
        "turn",
    )

    def __init__(self) -> None:
        self.turn = 0
        self.activated: dict[str, int] = {}
        self.last_injected: dict[str, int] = {}
        self.injections: dict[str, int] = {}
        self.recent_turn_ids: deque[str] = deque()
        self.seen_turn_ids: set[str] = set()


class InMemoryCooldowns:
    """Thread-safe in-process :class:`Cooldowns` for the embedded mode (dies with the process).

    Remembers the last ``remembered_turns`` turn ids per scope (older retries would count again)
    and at most ``max_scopes`` scopes (least recently used dropped first).
    """

    def __init__(
        self, *, remembered_turns: int = DEFAULT_REMEMBERED_TURNS, max_scopes: int = 100_000
    ) -> None:
        if remembered_turns < 1:
            raise InputError("remembered_turns must be >= 1", field="remembered_turns")
        self._remembered = remembered_turns
        self._max_scopes = max_scopes
        self._scopes: OrderedDict[str, _Scope] = OrderedDict()
        self._lock = threading.Lock()

    def snapshot(self, scope_id: str) -> CooldownState:
        """The scope's counters now (an empty state for an unknown scope)."""
        with self._lock:
            scope = self._scopes.get(scope_id)
            if scope is None:
                return CooldownState()
            return CooldownState(
                turn=scope.turn,
                last_injected=dict(scope.last_injected),
                injections=dict(scope.injections),
                activated=dict(scope.activated),
            )

    def record(
        self,
        scope_id: str,
        turn_id: str,
        injected: Iterable[Injected],
        *,
        fresh: Iterable[Injected] | None = None,
    ) -> bool:
        """Count a committed turn and its injections; False if ``turn_id`` was already counted."""
        check_ids(scope_id, turn_id)
        ids = injected_ids(injected)
        fresh_ids = [] if fresh is None else injected_ids(fresh)
        with self._lock:
            scope = self._scopes.get(scope_id)
            if scope is None:
                scope = self._scopes[scope_id] = _Scope()
                while len(self._scopes) > self._max_scopes:
                    self._scopes.popitem(last=False)
            self._scopes.move_to_end(scope_id)
            if turn_id in scope.seen_turn_ids:
                return False
            scope.turn += 1
            scope.seen_turn_ids.add(turn_id)
            scope.recent_turn_ids.append(turn_id)
            if len(scope.recent_turn_ids) > self._remembered:
                scope.seen_turn_ids.discard(scope.recent_turn_ids.popleft())
            for entry_id in ids:
                scope.last_injected[entry_id] = scope.turn
                scope.injections[entry_id] = scope.injections.get(entry_id, 0) + 1
            for entry_id in fresh_ids:
                scope.activated[entry_id] = scope.turn
            return True
