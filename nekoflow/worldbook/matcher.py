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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from nekoflow.errors import InputError
from nekoflow.worldbook.automaton import CompiledBookCache, default_cache
from nekoflow.worldbook.cooldowns import Cooldowns, CooldownState
from nekoflow.worldbook.models import (
    ALWAYS_SOURCE,
    ENTRY_TYPE_PRIORITY,
    SOURCE_SCORES,
    WorldBook,
    WorldBookEntry,
    WorldBookMatchResult,
    WorldBookRecallConfig,
    WorldBookRecallContext,
)

_KEYWORD_SOURCES = ("user", "assistant_recent", "history")


def assistant_recent_text(messages: Sequence[Mapping[str, Any]], limit: int) -> str:
    """The last ``limit`` non-empty assistant messages, oldest first, joined by newlines."""
    picked: list[str] = []
    for msg in reversed(messages):
        if len(picked) >= limit:
            break
        content = msg.get("content")
        if msg.get("role") == "assistant" and isinstance(content, str) and content:
            picked.append(content)
    return "\n".join(reversed(picked))


def history_text(messages: Sequence[Mapping[str, Any]], max_chars: int) -> str:
    """Newest messages (any role) back until their contents would pass ``max_chars``, joined."""
    picked: list[str] = []
    total = 0
    for msg in reversed(messages):
        content = msg.get("content")
        if not isinstance(content, str) or not content:
            continue
        if total + len(content) > max_chars:
            break
        picked.append(content)
        total += len(content)
    return "\n".join(reversed(picked))


def scene_matches(scene: Mapping[str, Any], state_triggers: Mapping[str, Sequence[str]]) -> bool:
    """True when any trigger field matches: string value listed, or list value sharing one."""
    for field, allowed in state_triggers.items():
        value = scene.get(field)
        if isinstance(value, str):
            if value in allowed:
                return True
        elif isinstance(value, list | tuple | set | frozenset) and any(
            isinstance(v, str) and v in allowed for v in value
        ):
            return True
    return False


class _Hit:
    """A fired entry before ranking and budgets (cheap; models are built only for the winners)."""

    __slots__ = ("book", "book_idx", "entry", "entry_idx", "keywords", "score", "sources")

    def __init__(
        self,
        book: WorldBook,
        book_idx: int,
        entry: WorldBookEntry,
        entry_idx: int,
        sources: list[str],
        keywords: dict[str, list[str]],
    ) -> None:
        self.book = book
        self.book_idx = book_idx
        self.entry = entry
        self.entry_idx = entry_idx
        self.sources = sources
        self.keywords = keywords
        self.score = sum(SOURCE_SCORES[s] for s in sources) + entry.priority + entry.weight

    def rank(self, extra_score: int = 0) -> tuple[int, int, int, int, int, int]:
        e = self.entry
        return (
            -(self.score + extra_score),
            -e.priority,
            -ENTRY_TYPE_PRIORITY.get(e.entry_type, 0),
            len(e.content),
            self.book_idx,
            self.entry_idx,
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


def _keywords_ok(found: set[int] | None, entry: WorldBookEntry) -> bool:
    if not found:
        return False
    if entry.match_mode == "all":
        return len(found) == sum(1 for k in entry.keywords if k)
    return True


def _book_applies(book: WorldBook, character_keys: set[str]) -> bool:
    if not book.enabled:
        return False
    if not book.character_ids or not character_keys:
        return True
    return not character_keys.isdisjoint(book.character_ids)


def _collect(
    books: Sequence[WorldBook],
    context: WorldBookRecallContext,
    config: WorldBookRecallConfig,
    state: CooldownState | None,
    character_keys: set[str],
    cache: CompiledBookCache,
) -> list[_Hit]:
    user = context.latest_user_message
    assistant = context.assistant_recent_text or assistant_recent_text(
        context.recent_messages, config.recent_message_limit
    )
    history = context.history_text or history_text(
        context.recent_messages, config.max_history_chars
    )
    texts: dict[str, tuple[str, str]] = {}
    if user:
        texts["user"] = (user, user.lower())
    if assistant and config.enable_assistant_trigger:
        texts["assistant_recent"] = (assistant, assistant.lower())
    if history and config.enable_history_trigger:
        texts["history"] = (history, history.lower())
    scene = context.scene if config.enable_scene_trigger else {}

    hits: list[_Hit] = []
    assistant_pending: list[tuple[_Hit, list[str]]] = []
    for book_idx, book in enumerate(books):
        if not _book_applies(book, character_keys):
            continue
        compiled = cache.get(book)
        entries = book.entries
        for i in compiled.always_on:
            e = entries[i]
            if e.enabled and not (state and state.blocks(e)):
                hits.append(_Hit(book, book_idx, e, i, [ALWAYS_SOURCE], {}))

        by_source = {src: compiled.keyword_hits(*pair) for src, pair in texts.items()}
        candidates: set[int] = set()
        for found in by_source.values():
            candidates.update(found)
        scene_fired: set[int] = set()
        if scene:
            for i in compiled.with_state_triggers:
                e = entries[i]
                if "scene_state" in e.trigger_sources and scene_matches(scene, e.state_triggers):
                    scene_fired.add(i)
            candidates |= scene_fired

        for i in sorted(candidates):
            e = entries[i]
            if e.always_on or not e.enabled or (state and state.blocks(e)):
                continue
            sources: list[str] = []
            keywords: dict[str, list[str]] = {}
            for src in _KEYWORD_SOURCES:
                found = by_source.get(src, {}).get(i)
                if src in e.trigger_sources and _keywords_ok(found, e):
                    sources.append(src)
                    keywords[src] = [e.keywords[k] for k in sorted(found or ())]
            if i in scene_fired:
                sources.append("scene_state")
            asst_kw = keywords.pop("assistant_recent", None)
            if asst_kw is not None:
                sources.remove("assistant_recent")
            hit = _Hit(book, book_idx, e, i, sources, keywords)
            if (
                asst_kw is not None
                and e.priority >= config.min_assistant_priority
                and e.entry_type != "secret"
            ):
                assistant_pending.append((hit, asst_kw))
            elif sources:
                hits.append(hit)

    # The assistant cap keeps the candidates that rank highest with the assistant source added.
    assistant_pending.sort(key=lambda p: p[0].rank(SOURCE_SCORES["assistant_recent"]))
    for n, (hit, asst_kw) in enumerate(assistant_pending):
        if n < config.max_assistant_triggered_entries:
            _add_assistant(hit, asst_kw)
        if hit.sources:
            hits.append(hit)
    return hits


_SOURCE_ORDER = {s: n for n, s in enumerate(("user", "assistant_recent", "history", "scene_state"))}


def _add_assistant(hit: _Hit, asst_kw: list[str]) -> None:
    hit.sources = sorted([*hit.sources, "assistant_recent"], key=_SOURCE_ORDER.__getitem__)
    hit.keywords["assistant_recent"] = asst_kw
    hit.score += SOURCE_SCORES["assistant_recent"]


def _class_of(hit: _Hit) -> str:
    if hit.sources == [ALWAYS_SOURCE]:
        return "always"
    if hit.sources == ["scene_state"]:
        return "scene"
    return "keyword"


def _apply_budgets(hits: list[_Hit], config: WorldBookRecallConfig) -> list[_Hit]:
    remaining_total = config.max_total_chars
    remaining = {
        "always": config.max_always_chars,
        "scene": config.max_scene_chars,
        "keyword": config.max_keyword_chars,
    }
    taken: list[_Hit] = []
    for hit in hits:
        if len(taken) >= config.max_entries:
            break
        size = len(hit.entry.content)
        cls = _class_of(hit)
        if size > remaining_total or size > remaining[cls]:
            continue
        remaining_total -= size
        remaining[cls] -= size
        taken.append(hit)
    return taken


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _result(hit: _Hit) -> WorldBookMatchResult:
    return WorldBookMatchResult(
        entry=hit.entry,
        trigger_sources=hit.sources,
        matched_keywords=_dedupe(k for s in hit.sources for k in hit.keywords.get(s, ())),
        score=hit.score,
    )


def _recall(
    context: WorldBookRecallContext,
    world_books: Sequence[WorldBook],
    character_id: str | None,
    config: WorldBookRecallConfig | None,
    cooldowns: CooldownState | Cooldowns | None,
    cache: CompiledBookCache | None,
) -> list[_Hit]:
    context = _as_model(context, WorldBookRecallContext, "context")
    cfg = (
        WorldBookRecallConfig()
        if config is None
        else _as_model(config, WorldBookRecallConfig, "config")
    )
    if world_books is None:
        return []
    books = [_as_model(b, WorldBook, f"world_books[{n}]") for n, b in enumerate(world_books)]
    if character_id is not None and not isinstance(character_id, str):
        raise InputError("character_id must be a string", field="character_id")
    character_keys = {k for k in (character_id, context.character_id) if k}
    state = _cooldown_state(cooldowns, context, cfg)
    index = cache if cache is not None else default_cache()
    hits = _collect(books, context, cfg, state, character_keys, index)
    hits.sort(key=_Hit.rank)
    return _apply_budgets(hits, cfg)


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
    hits = _recall(context, world_books, character_id, config, cooldowns, cache)
    return [_result(h) for h in hits]


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
    out = []
    for hit in _recall(context, world_books, character_id, config, cooldowns, None):
        r = _result(hit)
        out.append(
            {
                "world_book_name": hit.book.name,
                "world_book_id": hit.book.id,
                "entry_name": r.entry.name,
                "entry_id": r.entry.id,
                "matched_keywords": r.matched_keywords,
                "trigger_sources": r.trigger_sources,
                "score": r.score,
                "content_preview": r.entry.content[:200],
            }
        )
    return out
