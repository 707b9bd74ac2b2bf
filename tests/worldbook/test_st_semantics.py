"""SillyTavern lorebook semantics, each against its documented meaning (World Info docs)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nekoflow.worldbook import (
    InMemoryCooldowns,
    WorldBook,
    WorldBookEntry,
    WorldBookRecallConfig,
    WorldBookRecallContext,
    match_entries_v2,
)
from nekoflow.worldbook.automaton import CompiledBookCache
from nekoflow.worldbook.cooldowns import CooldownState
from nekoflow.worldbook.keys import compile_regex_key, required_literals, whole_word_in
from nekoflow.worldbook.matcher import recall

ST = ["user", "history"]


def entry(entry_id: str, keywords: list[str], content: str = "", **rules: Any) -> WorldBookEntry:
    fields = {k: rules.pop(k) for k in ("priority", "always_on", "cooldown_turns") if k in rules}
    return WorldBookEntry(
        id=entry_id,
        name=entry_id,
        keywords=keywords,
        content=content or f"content of {entry_id}",
        trigger_sources=ST,
        rules=rules,
        **fields,
    )


def book(*entries: WorldBookEntry, **rules: Any) -> WorldBook:
    return WorldBook(id="b", name="book", entries=list(entries), rules=rules)


def ids(user: str, *books: WorldBook, turn_id: str = "t", **kw: Any) -> list[str]:
    ctx = WorldBookRecallContext(latest_user_message=user, turn_id=turn_id, **kw)
    cfg = WorldBookRecallConfig(max_entries=50, max_total_chars=100_000, max_keyword_chars=100_000)
    return [r.entry.id for r in match_entries_v2(ctx, list(books), config=cfg)]


# ---------------------------------------------------------------- regex keys


def test_regex_keys_use_their_flags() -> None:
    b = book(
        entry("dragon", ["/dragons?/i"], regex_keys=True),
        entry("tower", ["/(白|黑)塔/"], regex_keys=True),
        entry("literal", ["/dragons?/i"]),  # regex_keys off: literal text
    )
    assert ids("Two DRAGONS fly", b) == ["dragon"]
    assert ids("她走进黑塔", b) == ["tower"]
    assert ids("type /dragons?/i here", b) == ["dragon", "literal"]


def test_regex_word_boundary_is_javascripts() -> None:
    b = book(entry("cat", [r"/\bcat\b/"], regex_keys=True))
    assert ids("和cat说话", b) == ["cat"]  # CJK is \W in JavaScript
    assert ids("category", b) == []


def test_regex_without_literal_runs_every_scan_and_bad_regex_is_literal() -> None:
    b = book(
        entry("any", [r"/\d{3}/"], regex_keys=True), entry("bad", ["/(oops/"], regex_keys=True)
    )
    assert required_literals(r"/\d{3}/") is None
    assert ids("room 101", b) == ["any"]
    assert ids("say /(oops/ now", b) == ["bad"]


def test_hostile_regex_times_out_as_no_match(caplog: pytest.LogCaptureFixture) -> None:
    b = book(entry("evil", ["/(a|aa)+$/"], regex_keys=True), entry("ok", ["a"]))
    ctx = WorldBookRecallContext(latest_user_message="a" * 5000 + "!")
    with caplog.at_level(logging.WARNING):
        outcome = recall(ctx, [b], config=WorldBookRecallConfig(regex_timeout=0.02))
    assert [r.entry.id for r in outcome.results] == ["ok"]
    assert outcome.timed_out == ["evil"]
    assert "entry evil: regex key timed out" in caplog.text
    assert "aaaa" not in caplog.text  # no message text in logs
    # Once timed out, the key is not run again for this book version (no second stall).
    cache = CompiledBookCache()
    cfg = WorldBookRecallConfig(regex_timeout=0.02)
    first = recall(ctx, [b], config=cfg, cache=cache)
    again = recall(ctx, [b], config=cfg, cache=cache)
    assert first.timed_out == ["evil"] and again.timed_out == []
    assert [r.entry.id for r in again.results] == ["ok"]


# ---------------------------------------------------------------- secondary keys


@pytest.mark.parametrize(
    ("logic", "fires_on"),
    [
        ("and_any", {"one", "both"}),
        ("and_all", {"both"}),
        ("not_any", {"none"}),
        ("not_all", {"none", "one"}),
    ],
)
def test_selective_logic(logic: str, fires_on: set[str]) -> None:
    b = book(entry("e", ["king"], secondary_keywords=["crown", "throne"], selective_logic=logic))
    texts = {
        "none": "the king",
        "one": "the king and his crown",
        "both": "the king, crown and throne",
    }
    assert {name for name, text in texts.items() if ids(text, b)} == fires_on


def test_secondary_keys_are_looked_for_in_every_scanned_text() -> None:
    b = book(entry("e", ["king"], secondary_keywords=["crown"], selective_logic="not_any"))
    history = [{"role": "assistant", "content": "the crown glitters"}]
    assert ids("the king", b) == ["e"]
    assert ids("the king", b, recent_messages=history) == []


# ---------------------------------------------------------------- whole words


def test_whole_words_latin_and_cjk() -> None:
    assert not whole_word_in("cat", "category")
    assert whole_word_in("cat", "a cat!")
    assert whole_word_in("cat", "和cat说")
    assert whole_word_in("白塔", "白塔城里")  # CJK: substring
    assert whole_word_in("black cat", "theblack cats")  # several words: substring
    b = book(entry("cat", ["cat"], match_whole_words=True), entry("tower", ["白塔"]))
    assert ids("category 白塔城", b) == ["tower"]
    assert ids("the cat 白塔城", b) == ["cat", "tower"]
    assert ids("category", book(entry("cat", ["cat"]), match_whole_words=True)) == []
    assert ids("category", book(entry("cat", ["cat"]))) == ["cat"]


# ---------------------------------------------------------------- scan depth


def test_scan_depth_entry_and_book() -> None:
    history = [
        {"role": "user", "content": "the forest"},
        {"role": "assistant", "content": "the river"},
    ]
    b = book(
        entry("forest", ["forest"]),
        entry("river1", ["river"], scan_depth=1),
        entry("river2", ["river"], scan_depth=2),
        entry("forest2", ["forest"], scan_depth=2),
    )
    got = ids("hello", b, recent_messages=history)
    assert sorted(got) == ["forest", "river2"]
    shallow = book(entry("forest", ["forest"]), entry("hello", ["hello"]), scan_depth=1)
    assert ids("hello", shallow, recent_messages=history) == ["hello"]
    assert ids("hello", book(entry("hello", ["hello"]), scan_depth=0)) == []


# ---------------------------------------------------------------- recursion


def test_recursion_and_its_flags() -> None:
    b = book(
        entry("a", ["alpha"], "alpha mentions beta and gamma"),
        entry("b", ["beta"], "beta mentions delta"),
        entry("c", ["gamma"], "never by recursion", exclude_recursion=True),
        entry("d", ["delta"], "delta, second step"),
        entry("e", ["epsilon"], "only by recursion", delay_until_recursion=1),
        recursive_scanning=True,
    )
    assert sorted(ids("alpha", b)) == ["a", "b", "d"]
    assert ids("epsilon", b) == []
    assert sorted(ids("alpha epsilon", b)) == ["a", "b", "d"]
    b.entries[0] = entry("a", ["alpha"], "alpha mentions beta epsilon")
    assert sorted(ids("alpha", b)) == ["a", "b", "d", "e"]
    b.entries[0] = entry("a", ["alpha"], "alpha mentions beta", prevent_recursion=True)
    assert ids("alpha", b) == ["a"]
    not_recursive = book(*b.entries)
    not_recursive.entries[0] = entry("a", ["alpha"], "alpha mentions beta")
    assert ids("alpha", not_recursive) == ["a"]


def test_recursion_sources_and_max_steps() -> None:
    b = book(
        entry("a", ["alpha"], "see beta"),
        entry("b", ["beta"], "see delta"),
        entry("d", ["delta"], "end"),
        recursive_scanning=True,
    )
    ctx = WorldBookRecallContext(latest_user_message="alpha")
    cfg = WorldBookRecallConfig(max_recursion_steps=1)
    results = match_entries_v2(ctx, [b], config=cfg)
    assert [(r.entry.id, r.trigger_sources) for r in results] == [
        ("a", ["user"]),
        ("b", ["recursion"]),
    ]
    assert results[1].matched_keywords == ["beta"]


# ---------------------------------------------------------------- probability & groups


def test_probability_is_deterministic_per_turn_id() -> None:
    b = book(*[entry(f"e{i}", ["key"], probability=50) for i in range(40)])
    first = ids("key", b, turn_id="turn-1")
    assert first == ids("key", b, turn_id="turn-1")  # a retried turn picks the same entries
    assert first != ids("key", b, turn_id="turn-2")
    assert 8 < len(first) < 32
    assert ids("key", book(entry("never", ["key"], probability=0))) == []


def test_probability_drop_is_reported() -> None:
    b = book(entry("never", ["key"], probability=0))
    outcome = recall(WorldBookRecallContext(latest_user_message="key"), [b])
    assert [(d.entry_id, d.reason) for d in outcome.dropped] == [("never", "probability")]


def test_inclusion_group_weighted_and_deterministic() -> None:
    b = book(
        entry("heavy", ["key"], group="g", group_weight=90),
        entry("light", ["key"], group="g", group_weight=10),
        entry("free", ["key"]),
    )
    winners = [ids("key", b, turn_id=f"t{n}") for n in range(200)]
    assert all(len(w) == 2 and "free" in w for w in winners)
    heavy = sum("heavy" in w for w in winners)
    assert 150 < heavy < 199
    assert ids("key", b, turn_id="t7") == ids("key", b, turn_id="t7")
    outcome = recall(WorldBookRecallContext(latest_user_message="key", turn_id="t7"), [b])
    assert [d.reason for d in outcome.dropped] == ["group_lost"]


def test_group_override_and_scoring() -> None:
    b = book(
        entry("low", ["key"], group="g", group_override=True, priority=1),
        entry("high", ["key"], group="g", group_override=True, priority=9),
        entry("plain", ["key"], group="g"),
    )
    assert all(ids("key", b, turn_id=f"t{n}") == ["high"] for n in range(20))
    scored = book(
        entry("one", ["key"], group="g"),
        entry("two", ["key", "lock"], group="g"),
        group_scoring=True,
    )
    assert all(ids("key lock", scored, turn_id=f"t{n}") == ["two"] for n in range(20))


# ---------------------------------------------------------------- sticky, cooldown, delay


def _turn(store: InMemoryCooldowns, b: WorldBook, user: str, turn_id: str) -> list[str]:
    ctx = WorldBookRecallContext(latest_user_message=user, scope_id="s", turn_id=turn_id)
    results = match_entries_v2(ctx, [b], cooldowns=store)
    fresh = [r.entry.id for r in results if "sticky" not in r.trigger_sources]
    store.record("s", turn_id, [r.entry.id for r in results], fresh=fresh)
    return [r.entry.id for r in results]


def test_sticky_then_cooldown_and_delay() -> None:
    store = InMemoryCooldowns()
    b = book(
        entry("s", ["spark"], sticky=2, cooldown_turns=1),
        entry("late", ["spark"], delay=3),
    )
    assert _turn(store, b, "spark", "t1") == ["s"]  # late: delayed until 3 turns exist
    assert _turn(store, b, "nothing", "t2") == ["s"]  # sticky, no key needed
    assert _turn(store, b, "nothing", "t3") == ["s"]
    assert _turn(store, b, "spark", "t4") == ["late"]  # s: cooldown after its sticky window
    assert _turn(store, b, "spark", "t5") == ["s", "late"]


def test_delay_and_cooldown_drops_are_reported() -> None:
    b = book(entry("late", ["spark"], delay=2), entry("cool", ["spark"], cooldown_turns=3))
    state = CooldownState(turn=1, last_injected={"cool": 1})
    outcome = recall(WorldBookRecallContext(latest_user_message="spark"), [b], cooldowns=state)
    assert {(d.entry_id, d.reason) for d in outcome.dropped} == {
        ("late", "delay"),
        ("cool", "cooldown"),
    }


# ---------------------------------------------------------------- budgets


def test_token_budget_and_per_book_budget() -> None:
    b = book(
        entry("big", ["key"], "龙" * 60, priority=3),
        entry("mid", ["key"], "塔" * 30, priority=2),
        entry("small", ["key"], "剑" * 10, priority=1),
    )
    ctx = WorldBookRecallContext(latest_user_message="key")
    cfg = WorldBookRecallConfig(max_total_tokens=45, max_keyword_chars=10_000)
    outcome = recall(ctx, [b], config=cfg)
    assert [r.entry.id for r in outcome.results] == ["mid", "small"]
    (drop,) = outcome.dropped
    assert (drop.entry_id, drop.reason, drop.needed, drop.unit) == (
        "big",
        "over_budget",
        60,
        "tokens",
    )
    b.rules.token_budget = 35
    outcome = recall(ctx, [b], config=WorldBookRecallConfig(max_keyword_chars=10_000))
    assert [r.entry.id for r in outcome.results] == ["mid"]


def test_oversize_entry_is_cut_when_first_in_line_else_skipped() -> None:
    long = entry("eldoria", ["forest"], "x" * 1551, priority=5)
    short = entry("short", ["forest"], "y" * 100)
    ctx = WorldBookRecallContext(latest_user_message="Tell me about the forest")
    seed = recall(ctx, [book(long, short)])  # seed default: skip, with the budget it needs
    assert [r.entry.id for r in seed.results] == ["short"]
    (drop,) = seed.dropped
    assert (drop.reason, drop.needed, drop.available, drop.unit) == (
        "over_budget",
        1551,
        1200,
        "chars",
    )
    cut = recall(ctx, [book(long, short)], config=WorldBookRecallConfig(oversize="cut"))
    assert [(r.entry.id, r.cut_to) for r in cut.results] == [("eldoria", 1200)]
    assert cut.results[0].content == "x" * 1200
    assert [(d.entry_id, d.reason) for d in cut.dropped] == [("short", "over_budget")]
    # Not first in line: a higher-ranked entry took part of the budget, so it is skipped.
    first = entry("first", ["forest"], "z" * 10, priority=9)
    later = recall(ctx, [book(first, long)], config=WorldBookRecallConfig(oversize="cut"))
    assert [r.entry.id for r in later.results] == ["first"]
    assert later.dropped[0].reason == "over_budget"


def test_cut_to_token_budget() -> None:
    ctx = WorldBookRecallContext(latest_user_message="forest")
    cfg = WorldBookRecallConfig(oversize="cut", max_total_tokens=50, max_keyword_chars=10_000)
    outcome = recall(ctx, [book(entry("e", ["forest"], "森林" * 100))], config=cfg)
    assert outcome.results[0].cut_to == 50


def test_max_entries_drop_reported_and_ignore_budget() -> None:
    b = book(*[entry(f"e{i}", ["key"], priority=10 - i) for i in range(4)])
    outcome = recall(
        WorldBookRecallContext(latest_user_message="key"),
        [b],
        config=WorldBookRecallConfig(max_entries=2),
    )
    assert [d.reason for d in outcome.dropped] == ["max_entries", "max_entries"]
    free = book(entry("huge", ["key"], "x" * 5000, ignore_budget=True))
    assert ids("key", free) == ["huge"]


def test_seed_books_unaffected_by_cache_fingerprint_of_rules() -> None:
    cache = CompiledBookCache()
    b = book(entry("e", ["cat"]))
    ctx = WorldBookRecallContext(latest_user_message="category")
    assert len(match_entries_v2(ctx, [b], cache=cache)) == 1
    b.rules.match_whole_words = True  # index rebuilt for the new rule
    assert match_entries_v2(ctx, [b], cache=cache) == []


# ---------------------------------------------------------------- regex pre-filter soundness

_ALPHABET = "ab白塔"
_PATTERNS = [
    "/a(b|塔)a?/",
    "/白.{0,2}塔/",
    "/(ab|白)+塔/",
    "/a[b白]*塔/",
    "/(?:白|黑)塔/i",
    "/ab?a/i",
    r"/\bab\b/",
    "/塔{2,3}/",
]


@given(
    pattern=st.sampled_from(_PATTERNS),
    text=st.text(alphabet=_ALPHABET + "AB ", max_size=12),
)
@settings(max_examples=400, deadline=None)
def test_regex_keys_match_exactly_like_the_regex(pattern: str, text: str) -> None:
    """The index (literal pre-filter or exact literals) never changes a regex key's answer."""
    rx = compile_regex_key(pattern)
    assert rx is not None
    b = book(entry("r", [pattern], regex_keys=True))
    assert (ids(text, b) == ["r"]) == (rx.search(text) is not None)
