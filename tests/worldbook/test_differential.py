"""Differential tests: the automaton-backed matcher equals a plain per-entry substring scan."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nekoflow.worldbook import (
    WorldBook,
    WorldBookEntry,
    WorldBookRecallConfig,
    WorldBookRecallContext,
    match_entries_v2,
)
from nekoflow.worldbook.automaton import CompiledBookCache, compile_book
from nekoflow.worldbook.cooldowns import CooldownState
from nekoflow.worldbook.keys import compile_regex_key

SCORES = {"user": 50, "assistant_recent": 30, "history": 20, "scene_state": 45, "always": 100}
TYPE_RANK = {
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


# ---------------------------------------------------------------- the straightforward reference


def plain_keywords(text: str, entry: WorldBookEntry) -> list[str]:
    """Keywords of ``entry`` found in ``text`` by the plain definition, in keyword order."""
    subject = text if entry.case_sensitive else text.lower()
    return [
        kw
        for kw in entry.keywords
        if kw and (kw if entry.case_sensitive else kw.lower()) in subject
    ]


def plain_fires(text: str, entry: WorldBookEntry) -> list[str] | None:
    if not text:
        return None
    found = plain_keywords(text, entry)
    if not found:
        return None
    if entry.match_mode == "all" and len(found) != len([k for k in entry.keywords if k]):
        return None
    return found


def plain_scene(scene: dict[str, Any], triggers: dict[str, list[str]]) -> bool:
    for name, allowed in triggers.items():
        value = scene.get(name)
        if isinstance(value, str) and value in allowed:
            return True
        if isinstance(value, list) and any(isinstance(v, str) and v in allowed for v in value):
            return True
    return False


def reference_match(
    context: WorldBookRecallContext,
    books: list[WorldBook],
    character_id: str | None = None,
    config: WorldBookRecallConfig | None = None,
    state: CooldownState | None = None,
) -> list[tuple[str, list[str], list[str], int]]:
    """Plain implementation of SPEC "World book"; returns (entry id, sources, keywords, score)."""
    cfg = config or WorldBookRecallConfig()
    msgs = context.recent_messages
    assistant = context.assistant_recent_text
    if not assistant:
        picked = [m["content"] for m in msgs if m.get("role") == "assistant" and m.get("content")]
        assistant = "\n".join(
            picked[-cfg.recent_message_limit :] if cfg.recent_message_limit else []
        )
    history = context.history_text
    if not history:
        parts: list[str] = []
        for m in reversed(msgs):
            if not m.get("content"):
                continue
            if sum(map(len, parts)) + len(m["content"]) > cfg.max_history_chars:
                break
            parts.insert(0, m["content"])
        history = "\n".join(parts)
    keys = {k for k in (character_id, context.character_id) if k}

    rows: list[dict[str, Any]] = []
    for bi, book in enumerate(books):
        if not book.enabled:
            continue
        if book.character_ids and keys and not (keys & set(book.character_ids)):
            continue
        for ei, e in enumerate(book.entries):
            if not e.enabled:
                continue
            if cfg.enable_cooldown and state is not None and e.id:
                if e.max_injections_per_session and (
                    state.injections.get(e.id, 0) >= e.max_injections_per_session
                ):
                    continue
                last = state.last_injected.get(e.id)
                if (
                    e.cooldown_turns
                    and last is not None
                    and state.turn + 1 - last <= e.cooldown_turns
                ):
                    continue
            base = {"bi": bi, "ei": ei, "e": e}
            if e.always_on:
                rows.append({**base, "src": {"always": []}})
                continue
            src: dict[str, list[str]] = {}
            if "user" in e.trigger_sources and (kw := plain_fires(context.latest_user_message, e)):
                src["user"] = kw
            if (
                cfg.enable_assistant_trigger
                and "assistant_recent" in e.trigger_sources
                and e.priority >= cfg.min_assistant_priority
                and e.entry_type != "secret"
                and (kw := plain_fires(assistant, e))
            ):
                src["assistant_recent"] = kw
            if (
                cfg.enable_history_trigger
                and "history" in e.trigger_sources
                and (kw := plain_fires(history, e))
            ):
                src["history"] = kw
            if (
                cfg.enable_scene_trigger
                and "scene_state" in e.trigger_sources
                and plain_scene(context.scene, e.state_triggers)
            ):
                src["scene_state"] = []
            if src:
                rows.append({**base, "src": src})

    def score(row: dict[str, Any], sources: list[str]) -> int:
        return sum(SCORES[s] for s in sources) + row["e"].priority + row["e"].weight

    def key(row: dict[str, Any], sources: list[str]) -> tuple[int, ...]:
        e = row["e"]
        return (
            -score(row, sources),
            -e.priority,
            -TYPE_RANK[e.entry_type],
            len(e.content),
            row["bi"],
            row["ei"],
        )

    # assistant cap: the best-ranked assistant candidates keep the source
    asst = sorted(
        (r for r in rows if "assistant_recent" in r["src"]), key=lambda r: key(r, list(r["src"]))
    )
    for r in asst[cfg.max_assistant_triggered_entries :]:
        del r["src"]["assistant_recent"]
    rows = [r for r in rows if r["src"]]
    rows.sort(key=lambda r: key(r, list(r["src"])))

    out: list[tuple[str, list[str], list[str], int]] = []
    total, budget = (
        cfg.max_total_chars,
        {
            "always": cfg.max_always_chars,
            "scene": cfg.max_scene_chars,
            "keyword": cfg.max_keyword_chars,
        },
    )
    for r in rows:
        if len(out) >= cfg.max_entries:
            break
        sources = list(r["src"])
        cls = (
            "always"
            if sources == ["always"]
            else "scene"
            if sources == ["scene_state"]
            else "keyword"
        )
        size = len(r["e"].content)
        if size > total or size > budget[cls]:
            continue
        total -= size
        budget[cls] -= size
        kws = list(dict.fromkeys(k for s in sources for k in r["src"][s]))
        out.append((r["e"].id, sources, kws, score(r, sources)))
    return out


def actual(results: list[Any]) -> list[tuple[str, list[str], list[str], int]]:
    return [(r.entry.id, r.trigger_sources, r.matched_keywords, r.score) for r in results]


# ---------------------------------------------------------------- strategies

ALPHABET = "abAB白塔星火Iİıi\u0307ßẞσΣς 😀\udc80é"
keyword = st.text(alphabet=ALPHABET, min_size=0, max_size=3)
text = st.text(alphabet=ALPHABET + "xyz。,", max_size=40)
SOURCES = ["user", "assistant_recent", "history", "scene_state"]


@st.composite
def entries(draw: st.DrawFn, n: int) -> WorldBookEntry:
    return WorldBookEntry(
        id=f"e{n}",
        name=f"entry {n}",
        keywords=draw(st.lists(keyword, max_size=4)),
        content=draw(st.text(alphabet="内容x", max_size=8)),
        enabled=draw(st.booleans() | st.just(True)),
        priority=draw(st.integers(-5, 40)),
        case_sensitive=draw(st.booleans()),
        match_mode=draw(st.sampled_from(["any", "all"])),
        trigger_sources=draw(
            st.lists(st.sampled_from(SOURCES), min_size=1, max_size=4, unique=True)
        ),
        always_on=draw(st.booleans().map(lambda b: b and draw(st.integers(0, 5)) == 0)),
        state_triggers=draw(
            st.dictionaries(
                st.sampled_from(["location", "arc"]),
                st.lists(st.sampled_from(["白塔", "森林"]), max_size=2),
                max_size=2,
            )
        ),
        cooldown_turns=draw(st.integers(0, 2)),
        max_injections_per_session=draw(st.integers(0, 2)),
        entry_type=draw(st.sampled_from(list(TYPE_RANK))),
        weight=draw(st.integers(-3, 3)),
    )


@st.composite
def books(draw: st.DrawFn) -> list[WorldBook]:
    out = []
    counter = 0
    for b in range(draw(st.integers(1, 3))):
        items = []
        for _ in range(draw(st.integers(0, 8))):
            items.append(draw(entries(counter)))
            counter += 1
        out.append(
            WorldBook(
                id=f"b{b}",
                name=f"book {b}",
                entries=items,
                enabled=draw(st.booleans() | st.just(True)),
                character_ids=draw(st.sampled_from([[], ["风堇"], ["uuid-1", "other"]])),
            )
        )
    return out


@st.composite
def contexts(draw: st.DrawFn) -> WorldBookRecallContext:
    msgs = draw(
        st.lists(
            st.fixed_dictionaries(
                {"role": st.sampled_from(["user", "assistant"]), "content": text}
            ),
            max_size=6,
        )
    )
    return WorldBookRecallContext(
        latest_user_message=draw(text),
        recent_messages=msgs,
        assistant_recent_text=draw(st.just("") | text),
        scene=draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "location": st.sampled_from(["白塔", "森林", "城"]),
                    "arc": st.lists(st.sampled_from(["白塔", "森林"]), max_size=2),
                },
            )
        ),
        character_id=draw(st.sampled_from(["", "uuid-1"])),
    )


configs = st.builds(
    WorldBookRecallConfig,
    recent_message_limit=st.integers(0, 4),
    max_history_chars=st.integers(0, 80),
    max_total_chars=st.integers(0, 40),
    max_entries=st.integers(0, 10),
    max_always_chars=st.integers(0, 20),
    max_scene_chars=st.integers(0, 20),
    max_keyword_chars=st.integers(0, 30),
    max_assistant_triggered_entries=st.integers(0, 3),
    min_assistant_priority=st.integers(0, 30),
    enable_assistant_trigger=st.booleans(),
    enable_history_trigger=st.booleans(),
    enable_scene_trigger=st.booleans(),
    enable_cooldown=st.booleans(),
)

states = st.builds(
    CooldownState,
    turn=st.integers(0, 4),
    last_injected=st.dictionaries(st.sampled_from([f"e{i}" for i in range(12)]), st.integers(0, 4)),
    injections=st.dictionaries(st.sampled_from([f"e{i}" for i in range(12)]), st.integers(0, 3)),
)


# ---------------------------------------------------------------- properties


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    books(),
    contexts(),
    st.none() | configs,
    st.sampled_from([None, "风堇", "nobody"]),
    st.none() | states,
)
def test_matcher_equals_plain_scan(
    world_books: list[WorldBook],
    context: WorldBookRecallContext,
    config: WorldBookRecallConfig | None,
    character_id: str | None,
    state: CooldownState | None,
) -> None:
    got = match_entries_v2(context, world_books, character_id, config, cooldowns=state)
    assert actual(got) == reference_match(context, world_books, character_id, config, state)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(st.lists(keyword, max_size=4), st.booleans()), max_size=10),
    st.text(alphabet=ALPHABET + "xyz", max_size=60),
)
def test_keyword_index_equals_substring_definition(
    spec: list[tuple[list[str], bool]], subject: str
) -> None:
    book = WorldBook(entries=[WorldBookEntry(keywords=kws, case_sensitive=cs) for kws, cs in spec])
    hits = compile_book(book).keyword_hits(subject, subject.lower())
    expected: dict[int, set[int]] = {}
    for ei, entry in enumerate(book.entries):
        for ki, kw in enumerate(entry.keywords):
            if not kw:
                continue
            found = kw in subject if entry.case_sensitive else kw.lower() in subject.lower()
            if found:
                expected.setdefault(ei, set()).add(ki)
    assert hits == expected


def test_length_changing_lowercase_is_exact() -> None:
    # 'İ'.lower() is two code points; the substring definition is on the lowered strings
    book = WorldBook(
        entries=[
            WorldBookEntry(id="dot", keywords=["i\u0307"]),
            WorldBookEntry(id="cap", keywords=["İ"]),
            WorldBookEntry(id="plain", keywords=["İS"], case_sensitive=True),
        ]
    )
    got = match_entries_v2(WorldBookRecallContext(latest_user_message="İstanbul"), [book])
    assert sorted(r.entry.id for r in got) == ["cap", "dot"]
    got = match_entries_v2(WorldBookRecallContext(latest_user_message="İS"), [book])
    assert sorted(r.entry.id for r in got) == ["cap", "dot", "plain"]


def test_surrogates_and_astral_keys_match_as_characters() -> None:
    # The index runs on UTF-16 code units: "😀" is the pair \ud83d\ude00, which two lone
    # surrogates in a text also spell, and whose second half is a lone-surrogate key.
    keys = ["😀", "\ude00", "\ud83d", "a😀", "/(😀|🐉)/", "/x\ude00/"]
    book = WorldBook(
        entries=[
            WorldBookEntry(id=f"k{n}", keywords=[k], rules={"regex_keys": k.startswith("/")})
            for n, k in enumerate(keys)
        ]
    )
    texts = ["😀", "\ud83d\ude00", "a\ud83d\ude00", "x\ude00", "x😀", "🐉", "a😀"]
    for text in texts:
        hits = compile_book(book).keyword_hits(text, text.lower())
        got = sorted(keys[i] for i in hits)
        want = sorted(
            k
            for k in keys
            if (k in text if not k.startswith("/") else compile_regex_key(k).search(text))
        )
        assert got == want, text


PIECE_KEYS = ["白塔", "塔\n星", "/塔.星/s", "/^星/m", "/火$/", "ab", "Σ", "/a(b|B)/", "/x*/"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(PIECE_KEYS), max_size=3), max_size=6),
    st.booleans(),
    st.booleans(),
    st.lists(st.text(alphabet="白塔星火abBΣσ\nx", max_size=12), max_size=4),
)
def test_recursion_pieces_scan_as_their_joined_text(
    spec: list[list[str]], regex: bool, words: bool, pieces: list[str]
) -> None:
    # Recursion remembers the automaton's pass over each piece; what it finds must be what a
    # scan of the joined text finds (keys across a piece's edge, anchors, whole words).
    entries = [WorldBookEntry(keywords=kws, rules={"regex_keys": regex}) for kws in spec]
    book = WorldBook(entries=entries, rules={"match_whole_words": words})
    compiled = compile_book(book)
    joined = "\n".join(pieces)
    want = compiled.scan(joined, joined.lower())
    assert compiled.scan_pieces(pieces) == want
    assert compiled.scan_pieces(pieces) == want  # from the remembered passes


def test_private_cache_gives_same_results_as_fresh_builds() -> None:
    book = WorldBook(
        id="b", entries=[WorldBookEntry(id=f"e{i}", keywords=[f"k{i}"]) for i in range(5)]
    )
    cache = CompiledBookCache(maxsize=2)
    ctx = WorldBookRecallContext(latest_user_message="k1 K3")
    first = match_entries_v2(ctx, [book], cache=cache)
    second = match_entries_v2(ctx, [book], cache=cache)
    assert actual(first) == actual(second) == reference_match(ctx, [book])
    assert (cache.misses, cache.hits) == (1, 1)
