"""Multi-source world-book recall (``match_entries_v2``) and the seed's legacy ``match_entries``.

Pure: no I/O except calling ``cooldowns.snapshot`` when a :class:`Cooldowns` store (rather than a
:class:`CooldownState`) is passed. Behaviour, as settled by SPEC "World book":

* sources and scores: user 50, assistant_recent 30, history 20, scene_state 45 (an ``always_on``
  entry fires alone with source ``"always"``, 100); score = Σ fired sources + priority + weight;
* keyword test per source: substring, both sides lower-cased unless ``case_sensitive``; ``any`` =
  at least one non-empty keyword, ``all`` = every non-empty keyword (in that same source text);
* scene_state (entry lists ``scene_state`` in ``trigger_sources``): fires when any field of
  ``state_triggers`` matches the scene — a string scene value must be one of the listed values, a
  list value must share one (fields are OR-ed, as in the seed's example where ``location``
  alone fires an entry that also lists ``arc``);
* assistant_recent fires only for ``priority >= min_assistant_priority``, never for ``secret``
  entries, and for at most ``max_assistant_triggered_entries`` entries per turn — the ones that
  rank highest with it (ties: book order, then entry order);
* character filter: a book with ``character_ids`` applies when ``character_id`` or
  ``context.character_id`` is listed (so a caller may pass the id in one, the name in the other);
  with neither given, no book is filtered out;
* cooldowns and per-session caps from a :class:`CooldownState` (skipped when
  ``config.enable_cooldown`` is off, or when a store is passed and ``context.scope_id`` is empty);
* sort by score, priority, entry-type rank (desc) and content length (asc), then budgets: walk
  the sorted hits, take one only if its content fits the remaining ``max_total_chars`` and the
  remaining budget of its class (always_on → ``max_always_chars``; fired by scene_state alone →
  ``max_scene_chars``; any keyword source → ``max_keyword_chars``), stop at ``max_entries``.

Keyword lookup uses the cached Aho-Corasick index of each book, so only fired entries cost time.

SillyTavern's semantics (``entry.rules`` / ``book.rules``; defaults change nothing above) are
decided per entry: secondary keys, regex keys, whole words, scan depth, sticky/delay, recursion
(``collect``), inclusion groups, probability, token budgets and cutting oversize entries
(``selection``). :func:`recall` also returns the matched-but-dropped entries with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nekoflow.errors import InputError
from nekoflow.macros import unknown_macros
from nekoflow.worldbook.automaton import CompiledBookCache, default_cache
from nekoflow.worldbook.collect import Collector, Drop, Hit
from nekoflow.worldbook.cooldowns import Cooldowns, CooldownState
from nekoflow.worldbook.models import (
    DroppedEntry,
    WorldBook,
    WorldBookEntry,
    WorldBookMatchResult,
    WorldBookRecallConfig,
    WorldBookRecallContext,
)
from nekoflow.worldbook.selection import apply_budgets, apply_groups, apply_probability
from nekoflow.worldbook.texts import (  # noqa: F401  (re-exported: the seed's helpers)
    assistant_recent_text,
    history_text,
    scene_matches,
)


def _as_model(value: Any, model: type, field: str) -> Any:
    if isinstance(value, model):
        return value
    if isinstance(value, Mapping):
        try:
            return model.model_validate(value)  # type: ignore[attr-defined]
        except ValidationError as exc:
            raise InputError(f"{field}: {exc}", field=field) from exc
    raise InputError(
        f"{field} must be a {model.__name__} (or a dict of its fields), got {type(value).__name__}",
        field=field,
    )


def _cooldown_state(
    cooldowns: CooldownState | Cooldowns | None,
    context: WorldBookRecallContext,
    config: WorldBookRecallConfig,
) -> CooldownState | None:
    if cooldowns is None or not config.enable_cooldown:
        return None
    if isinstance(cooldowns, CooldownState):
        return cooldowns
    if isinstance(cooldowns, Cooldowns):
        return cooldowns.snapshot(context.scope_id) if context.scope_id else None
    raise InputError(
        "cooldowns must be a CooldownState or a Cooldowns store "
        f"(snapshot/record), got {type(cooldowns).__name__}",
        field="cooldowns",
    )


def _book_applies(book: WorldBook, character_keys: set[str]) -> bool:
    if not book.enabled:
        return False
    if not book.character_ids or not character_keys:
        return True
    return not character_keys.isdisjoint(book.character_ids)


_key = attrgetter("key")


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _result(hit: Hit, cut_to: int | None = None) -> WorldBookMatchResult:
    return WorldBookMatchResult(
        entry=hit.entry,
        trigger_sources=hit.sources,
        matched_keywords=hit.matched_keywords(),
        score=hit.score,
        cut_to=cut_to,
    )


class RecallOutcome(BaseModel):
    """A recall's injected entries (ranked, within budgets) and the matched-but-dropped ones."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    results: list[WorldBookMatchResult] = Field(default_factory=list)
    dropped: list[DroppedEntry] = Field(default_factory=list)
    #: Ids of entries a regex key of which timed out this turn (counted as not matching).
    timed_out: list[str] = Field(default_factory=list)
    #: The books each result came from (parallel to ``results``).
    books: list[WorldBook] = Field(default_factory=list, exclude=True)


def _recall(
    context: WorldBookRecallContext,
    world_books: Sequence[WorldBook],
    character_id: str | None,
    config: WorldBookRecallConfig | None,
    cooldowns: CooldownState | Cooldowns | None,
    cache: CompiledBookCache | None,
    *,
    explain: bool = True,
) -> RecallOutcome:
    context = _as_model(context, WorldBookRecallContext, "context")
    cfg = (
        WorldBookRecallConfig()
        if config is None
        else _as_model(config, WorldBookRecallConfig, "config")
    )
    if world_books is None:
        return RecallOutcome()
    books = [_as_model(b, WorldBook, f"world_books[{n}]") for n, b in enumerate(world_books)]
    if character_id is not None and not isinstance(character_id, str):
        raise InputError("character_id must be a string", field="character_id")
    character_keys = {k for k in (character_id, context.character_id) if k}
    state = _cooldown_state(cooldowns, context, cfg)
    collector = Collector(context, cfg, state, cache if cache is not None else default_cache())
    for book_idx, book in enumerate(books):
        if _book_applies(book, character_keys):
            collector.add_book(book_idx, book)
    collector.finish_keywords()
    scanned: set[int] = set()
    step = 0
    while True:
        hits = sorted(collector.hits, key=_key)
        hits, lost_groups = apply_groups(hits, context.turn_id)
        hits, lost_probability = apply_probability(hits, context.turn_id)
        taken, lost_budget = apply_budgets(hits, cfg, explain=False)
        if not collector.recursive or step >= cfg.max_recursion_steps:
            break
        step += 1
        texts = []
        for hit, cut in taken:
            if id(hit) not in scanned and not hit.rules.prevent_recursion:
                scanned.add(id(hit))
                texts.append(hit.entry.content if cut is None else hit.entry.content[:cut])
        if not texts or not collector.recurse(texts, step):
            break
    if explain:  # the drops of the last walk (the quiet walks may stop early; taken is the same)
        _, lost_budget = apply_budgets(hits, cfg)
    return RecallOutcome(
        results=[_result(h, cut) for h, cut in taken],
        dropped=_explain(
            [*collector.dropped, *lost_groups, *lost_probability, *lost_budget] if explain else []
        ),
        timed_out=_dedupe(collector.timed_out),
        books=[h.book for h, _ in taken],
    )


def _explain(drops: list[Drop]) -> list[DroppedEntry]:
    """Public models of the drops, one per (entry, reason)."""
    seen: set[tuple[int, str]] = set()
    out = []
    for d in drops:
        key = (id(d.entry), d.reason)
        if key not in seen:
            seen.add(key)
            out.append(d.model())
    return out


def recall(
    context: WorldBookRecallContext,
    world_books: Sequence[WorldBook],
    character_id: str | None = None,
    config: WorldBookRecallConfig | None = None,
    cooldowns: CooldownState | Cooldowns | None = None,
    *,
    cache: CompiledBookCache | None = None,
) -> RecallOutcome:
    """Like :func:`match_entries_v2`, also telling which matched entries were dropped and why."""
    return _recall(context, world_books, character_id, config, cooldowns, cache)


def match_entries_v2(
    context: WorldBookRecallContext,
    world_books: Sequence[WorldBook],
    character_id: str | None = None,
    config: WorldBookRecallConfig | None = None,
    cooldowns: CooldownState | Cooldowns | None = None,
    *,
    cache: CompiledBookCache | None = None,
) -> list[WorldBookMatchResult]:
    """Recall the entries of ``world_books`` for one turn, ranked and trimmed to the budgets.

    ``cooldowns`` is a :class:`CooldownState` snapshot or a :class:`Cooldowns` store (its
    snapshot for ``context.scope_id`` is taken here). ``cache`` overrides the process-wide
    automaton cache.
    """
    return _recall(
        context, world_books, character_id, config, cooldowns, cache, explain=False
    ).results


def match_entries(
    user_message: str,
    world_books: Sequence[WorldBook],
    character_id: str | None = None,
    max_total_chars: int = 3000,
) -> list[WorldBookEntry]:
    """The seed's legacy API: recall from the user message alone, return the entries."""
    context = WorldBookRecallContext(latest_user_message=user_message)
    config = WorldBookRecallConfig(max_total_chars=max_total_chars)
    return [m.entry for m in match_entries_v2(context, world_books, character_id, config)]


def describe_matches(
    context: WorldBookRecallContext,
    world_books: Sequence[WorldBook],
    character_id: str | None = None,
    config: WorldBookRecallConfig | None = None,
    cooldowns: CooldownState | Cooldowns | None = None,
) -> list[dict[str, Any]]:
    """The seed's test-match payload: one dict per hit (names, keywords, sources, score)."""
    outcome = _recall(context, world_books, character_id, config, cooldowns, None)
    return _describe(outcome)


def _describe(outcome: RecallOutcome) -> list[dict[str, Any]]:
    out = []
    for r, book in zip(outcome.results, outcome.books, strict=True):
        out.append(
            {
                "world_book_name": book.name,
                "world_book_id": book.id,
                "entry_name": r.entry.name,
                "entry_id": r.entry.id,
                "matched_keywords": r.matched_keywords,
                "trigger_sources": r.trigger_sources,
                "score": r.score,
                "content_preview": r.entry.content[:200],
                **({"cut_to": r.cut_to} if r.cut_to is not None else {}),
                **({"unknown_macros": found} if (found := unknown_macros(r.entry.content)) else {}),
            }
        )
    return out


def describe_recall(
    context: WorldBookRecallContext,
    world_books: Sequence[WorldBook],
    character_id: str | None = None,
    config: WorldBookRecallConfig | None = None,
    cooldowns: CooldownState | Cooldowns | None = None,
) -> dict[str, Any]:
    """``test-match`` payload: ``matches`` (as :func:`describe_matches`) and ``dropped`` (each
    matched-but-dropped entry with its reason)."""
    outcome = _recall(context, world_books, character_id, config, cooldowns, None)
    return {
        "matches": _describe(outcome),
        "dropped": [d.model_dump() for d in outcome.dropped],
        "regex_timeouts": outcome.timed_out,
    }
