"""match_entries_v2 / match_entries: every behaviour of SPEC "World book" on hand-made books."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from nekoflow.errors import InputError
from nekoflow.worldbook import (
    CooldownState,
    InMemoryCooldowns,
    WorldBook,
    WorldBookEntry,
    WorldBookMatchResult,
    WorldBookRecallConfig,
    WorldBookRecallContext,
    describe_matches,
    match_entries,
    match_entries_v2,
)
from nekoflow.worldbook.automaton import CompiledBookCache
from nekoflow.worldbook.matcher import assistant_recent_text, history_text

Ctx = WorldBookRecallContext


def E(id: str, **kw: object) -> WorldBookEntry:
    kw.setdefault("name", id)
    kw.setdefault("content", f"content of {id}")
    return WorldBookEntry(id=id, **kw)  # type: ignore[arg-type]


def book(*entries: WorldBookEntry, **kw: object) -> WorldBook:
    kw.setdefault("id", "b")
    kw.setdefault("name", "book")
    return WorldBook(entries=list(entries), **kw)  # type: ignore[arg-type]


def ids(results: list) -> list[str]:
    return [r.entry.id for r in results]


ALL_SOURCES = ["user", "assistant_recent", "history", "scene_state"]


def seed_book() -> WorldBook:
    """The seed's 翁法罗斯 example: the storage-format entry plus the always-on rule."""
    return WorldBook(
        id="wb",
        name="翁法罗斯",
        character_ids=["风堇"],
        entries=[
            WorldBookEntry(
                id="white_tower_oath",
                name="白塔旧誓",
                keywords=["白塔", "旧日誓约"],
                content="白塔是上一轮命运循环中...",
                priority=80,
                trigger_sources=["user", "assistant_recent", "scene_state"],
                state_triggers={"location": ["白塔", "观星塔"]},
                cooldown_turns=2,
                entry_type="event",
                tags=["风堇", "翁法罗斯"],
            ),
        ],
    )


def test_seed_test_match_example_scores_155() -> None:
    ctx = Ctx(
        latest_user_message="进去看看",
        recent_messages=[
            {"role": "assistant", "content": "你们抵达了白塔门前,风堇望着塔顶的火种纹章沉默。"}
        ],
        scene={"location": "白塔", "arc": "火种仪式前夕"},
    )
    out = describe_matches(ctx, [seed_book()], character_id="风堇")
    assert out == [
        {
            "world_book_name": "翁法罗斯",
            "world_book_id": "wb",
            "entry_name": "白塔旧誓",
            "entry_id": "white_tower_oath",
            "matched_keywords": ["白塔"],
            "trigger_sources": ["assistant_recent", "scene_state"],
            "score": 155,
            "content_preview": "白塔是上一轮命运循环中...",
        }
    ]


@pytest.mark.parametrize(
    ("field", "score"),
    [("user", 50), ("assistant_recent", 30), ("history", 20)],
)
def test_each_keyword_source_scores(field: str, score: int) -> None:
    entry = E("e", keywords=["龙"], trigger_sources=[field], priority=20, weight=3)
    ctx = {
        "user": Ctx(latest_user_message="一条龙"),
        "assistant_recent": Ctx(assistant_recent_text="一条龙"),
        "history": Ctx(history_text="一条龙"),
    }[field]
    [hit] = match_entries_v2(ctx, [book(entry)])
    assert hit.trigger_sources == [field]
    assert hit.matched_keywords == ["龙"]
    assert hit.score == score + 20 + 3


def test_all_sources_add_up_and_keywords_are_deduplicated_in_source_order() -> None:
    entry = E(
        "e",
        keywords=["龙", "剑"],
        trigger_sources=ALL_SOURCES,
        state_triggers={"location": ["山"]},
        priority=25,
    )
    ctx = Ctx(
        latest_user_message="剑",
        assistant_recent_text="龙与剑",
        history_text="龙",
        scene={"location": "山"},
    )
    [hit] = match_entries_v2(ctx, [book(entry)])
    assert hit.trigger_sources == ALL_SOURCES
    assert hit.matched_keywords == ["剑", "龙"]
    assert hit.score == 50 + 30 + 20 + 45 + 25


def test_always_on_fires_without_keywords_and_scores_100() -> None:
    entry = E("rule", always_on=True, priority=90, weight=1, keywords=["x"])
    [hit] = match_entries_v2(Ctx(), [book(entry)])
    assert (hit.trigger_sources, hit.matched_keywords, hit.score) == (["always"], [], 191)


def test_entries_without_keywords_or_triggers_never_fire() -> None:
    entries = [
        E("none", trigger_sources=ALL_SOURCES),
        E("blank", keywords=["", ""], match_mode="all"),
        E("scene-no-triggers", trigger_sources=["scene_state"]),
    ]
    ctx = Ctx(latest_user_message="anything", scene={"location": "山"})
    assert match_entries_v2(ctx, [book(*entries)]) == []


def test_case_insensitive_by_default_and_sensitive_on_request() -> None:
    entries = [E("ci", keywords=["Dragon"]), E("cs", keywords=["Dragon"], case_sensitive=True)]
    assert ids(match_entries_v2(Ctx(latest_user_message="a DRAGON"), [book(*entries)])) == ["ci"]
    got = match_entries_v2(Ctx(latest_user_message="a Dragon"), [book(*entries)])
    assert sorted(ids(got)) == ["ci", "cs"]


def test_match_mode_all_needs_every_non_empty_keyword_in_one_source() -> None:
    entry = E("e", keywords=["龙", "", "剑"], match_mode="all", trigger_sources=["user", "history"])
    assert match_entries_v2(Ctx(latest_user_message="龙", history_text="剑"), [book(entry)]) == []
    [hit] = match_entries_v2(Ctx(latest_user_message="剑与龙"), [book(entry)])
    assert hit.matched_keywords == ["龙", "剑"]


def test_trigger_sources_restrict_where_keywords_count() -> None:
    entry = E("e", keywords=["龙"], trigger_sources=["history"])
    assert match_entries_v2(Ctx(latest_user_message="龙"), [book(entry)]) == []


def test_scene_state_string_and_list_values_and_fields_are_ored() -> None:
    entry = E(
        "e",
        trigger_sources=["scene_state"],
        state_triggers={"location": ["白塔", "观星塔"], "arc": ["命运循环", "火种仪式"]},
    )
    b = book(entry)
    assert ids(match_entries_v2(Ctx(scene={"location": "白塔", "arc": "别的"}), [b])) == ["e"]
    assert ids(match_entries_v2(Ctx(scene={"arc": ["x", "火种仪式"]}), [b])) == ["e"]
    assert match_entries_v2(Ctx(scene={"location": "森林", "arc": ["x"]}), [b]) == []
    assert match_entries_v2(Ctx(scene={"location": 3}), [b]) == []
    # scene triggers need "scene_state" in trigger_sources
    other = E("u", state_triggers={"location": ["白塔"]})
    assert match_entries_v2(Ctx(scene={"location": "白塔"}), [book(other)]) == []


def test_state_triggers_accept_a_single_string() -> None:
    assert E("e", state_triggers={"location": "白塔"}).state_triggers == {"location": ["白塔"]}


def test_sort_order_score_priority_type_then_content_length() -> None:
    entries = [
        E("low", keywords=["k"], priority=1, content="x"),
        E("lore", keywords=["k"], priority=5, entry_type="lore", content="x"),
        E("rel", keywords=["k"], priority=5, entry_type="relationship", content="xx"),
        E("rel-short", keywords=["k"], priority=5, entry_type="relationship", content="x"),
        E("weighted", keywords=["k"], priority=0, weight=10, content="x"),
        E("prio-beats-weight", keywords=["k"], priority=10, weight=0, content="x"),
    ]
    got = match_entries_v2(Ctx(latest_user_message="k"), [book(*entries)])
    assert ids(got) == ["prio-beats-weight", "weighted", "rel-short", "rel", "lore", "low"]


def test_disabled_books_and_entries_are_skipped() -> None:
    on = E("on", keywords=["k"])
    off = E("off", keywords=["k"], enabled=False)
    always_off = E("always-off", always_on=True, enabled=False)
    ctx = Ctx(latest_user_message="k")
    assert ids(match_entries_v2(ctx, [book(on, off, always_off)])) == ["on"]
    assert match_entries_v2(ctx, [book(on, enabled=False)]) == []


def test_character_filter_by_id_or_name() -> None:
    b = book(E("e", keywords=["k"]), character_ids=["风堇", "uuid-7"])
    ctx = Ctx(latest_user_message="k")
    assert ids(match_entries_v2(ctx, [b], character_id="风堇")) == ["e"]
    assert ids(match_entries_v2(ctx, [b], character_id="uuid-7")) == ["e"]
    assert match_entries_v2(ctx, [b], character_id="someone") == []
    # the id in the context and the name as argument: either listed is enough
    ctx_id = Ctx(latest_user_message="k", character_id="uuid-7")
    assert ids(match_entries_v2(ctx_id, [b], character_id="不在列表")) == ["e"]
    assert match_entries_v2(Ctx(latest_user_message="k", character_id="x"), [b]) == []
    # global books apply to everyone; no character given → no filtering
    assert ids(match_entries_v2(ctx, [b])) == ["e"]
    assert ids(match_entries_v2(ctx, [book(E("g", keywords=["k"]))], "x")) == ["g"]


def test_assistant_needs_priority_and_never_fires_secrets() -> None:
    src = ["assistant_recent"]
    entries = [
        E("low", keywords=["k"], trigger_sources=src, priority=19),
        E("ok", keywords=["k"], trigger_sources=src, priority=20),
        E("secret", keywords=["k"], trigger_sources=src, priority=99, entry_type="secret"),
    ]
    assert ids(match_entries_v2(Ctx(assistant_recent_text="k"), [book(*entries)])) == ["ok"]
    cfg = WorldBookRecallConfig(min_assistant_priority=0)
    got = match_entries_v2(Ctx(assistant_recent_text="k"), [book(*entries)], config=cfg)
    assert ids(got) == ["ok", "low"]


def test_assistant_cap_keeps_the_best_ranked_three() -> None:
    src = ["assistant_recent", "history"]
    entries = [E(f"e{p}", keywords=["k"], trigger_sources=src, priority=p) for p in range(20, 26)]
    got = match_entries_v2(Ctx(assistant_recent_text="k"), [book(*entries)])
    assert ids(got) == ["e25", "e24", "e23"]
    # entries that lost the assistant source still fire by their other sources
    got = match_entries_v2(Ctx(assistant_recent_text="k", history_text="k"), [book(*entries)])
    with_asst = [r.entry.id for r in got if "assistant_recent" in r.trigger_sources]
    assert with_asst == ["e25", "e24", "e23"]
    assert [r.trigger_sources for r in got[3:]] == [["history"]] * 3


def test_assistant_text_from_recent_messages_and_limit() -> None:
    msgs = [
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": ""},
        {"role": "assistant", "content": "a2"},
        {"role": "assistant", "content": "a3"},
    ]
    assert assistant_recent_text(msgs, 2) == "a2\na3"
    assert assistant_recent_text(msgs, 6) == "a1\na2\na3"
    assert assistant_recent_text(msgs, 0) == ""
    entry = E("e", keywords=["a1"], trigger_sources=["assistant_recent"], priority=30)
    cfg = WorldBookRecallConfig(recent_message_limit=2)
    assert match_entries_v2(Ctx(recent_messages=msgs), [book(entry)], config=cfg) == []
    assert ids(match_entries_v2(Ctx(recent_messages=msgs), [book(entry)])) == ["e"]
    # an explicit assistant_recent_text wins over the messages
    assert (
        match_entries_v2(Ctx(recent_messages=msgs, assistant_recent_text="zz"), [book(entry)]) == []
    )


def test_history_text_newest_back_until_max_chars() -> None:
    msgs = [{"role": "user", "content": "aaaa"}, {"role": "assistant", "content": "bbb"}]
    assert history_text(msgs, 7) == "aaaa\nbbb"
    assert history_text(msgs, 6) == "bbb"
    assert history_text(msgs, 2) == ""
    entry = E("e", keywords=["aaaa"], trigger_sources=["history"])
    cfg = WorldBookRecallConfig(max_history_chars=6)
    assert match_entries_v2(Ctx(recent_messages=msgs), [book(entry)], config=cfg) == []
    assert ids(match_entries_v2(Ctx(recent_messages=msgs), [book(entry)])) == ["e"]


def test_enable_flags_switch_sources_off() -> None:
    entry = E(
        "e", keywords=["k"], trigger_sources=ALL_SOURCES, state_triggers={"l": ["x"]}, priority=50
    )
    b = book(entry)
    for flag, ctx in [
        ("enable_assistant_trigger", Ctx(assistant_recent_text="k")),
        ("enable_history_trigger", Ctx(history_text="k")),
        ("enable_scene_trigger", Ctx(scene={"l": "x"})),
    ]:
        assert ids(match_entries_v2(ctx, [b])) == ["e"]
        assert match_entries_v2(ctx, [b], config=WorldBookRecallConfig(**{flag: False})) == []


def test_budgets_skip_and_continue_per_class() -> None:
    entries = [
        E("a1", always_on=True, priority=9, content="a" * 500),
        E("a2", always_on=True, priority=8, content="a" * 400),  # always budget 800 exceeded
        E("a3", always_on=True, priority=7, content="a" * 300),
        E("s1", trigger_sources=["scene_state"], state_triggers={"l": ["x"]}, content="s" * 900),
        E("s2", trigger_sources=["scene_state"], state_triggers={"l": ["x"]}, content="s" * 200),
        E("k1", keywords=["k"], priority=5, content="k" * 1000),
        E("k2", keywords=["k"], priority=4, content="k" * 300),
        E("k3", keywords=["k"], priority=3, content="k" * 150),
    ]
    cfg = WorldBookRecallConfig(max_total_chars=10_000)
    got = match_entries_v2(
        Ctx(latest_user_message="k", scene={"l": "x"}), [book(*entries)], config=cfg
    )
    assert ids(got) == ["a1", "a3", "k1", "k3", "s2"]  # s1 no longer fits 1000


def test_total_budget_and_max_entries() -> None:
    entries = [E(f"k{i}", keywords=["k"], priority=10 - i, content="x" * 100) for i in range(10)]
    ctx = Ctx(latest_user_message="k")
    cfg = WorldBookRecallConfig(max_total_chars=250)
    assert ids(match_entries_v2(ctx, [book(*entries)], config=cfg)) == ["k0", "k1"]
    cfg = WorldBookRecallConfig(max_entries=3, max_keyword_chars=10_000, max_total_chars=10_000)
    assert ids(match_entries_v2(ctx, [book(*entries)], config=cfg)) == ["k0", "k1", "k2"]
    assert len(match_entries_v2(ctx, [book(*entries)])) == 8  # default max_entries


def test_scene_only_hits_use_the_scene_budget_but_mixed_hits_the_keyword_budget() -> None:
    both = ["user", "scene_state"]
    mixed = E(
        "mixed", keywords=["k"], trigger_sources=both, state_triggers={"l": ["x"]}, content="m" * 50
    )
    cfg = WorldBookRecallConfig(max_scene_chars=0)
    ctx = Ctx(latest_user_message="k", scene={"l": "x"})
    assert ids(match_entries_v2(ctx, [book(mixed)], config=cfg)) == ["mixed"]
    cfg = WorldBookRecallConfig(max_keyword_chars=0)
    assert match_entries_v2(ctx, [book(mixed)], config=cfg) == []
    assert ids(match_entries_v2(Ctx(scene={"l": "x"}), [book(mixed)], config=cfg)) == ["mixed"]


def test_cooldown_window_and_session_cap_with_in_memory_store() -> None:
    cd = InMemoryCooldowns()
    entries = [
        E("cool", keywords=["k"], cooldown_turns=2),
        E("capped", keywords=["k"], max_injections_per_session=2),
        E("free", keywords=["k"]),
    ]
    b = book(*entries)
    ctx = Ctx(latest_user_message="k", scope_id="s1")
    fired = []
    for turn in range(1, 7):
        got = match_entries_v2(ctx, [b], cooldowns=cd)
        fired.append(sorted(ids(got)))
        cd.record("s1", f"t{turn}", got)
    assert fired == [
        ["capped", "cool", "free"],  # turn 1: cool injected
        ["capped", "free"],  # turn 2 (t+1) blocked
        ["free"],  # turn 3 (t+2) blocked; capped used twice
        ["cool", "free"],  # turn 4 fires again
        ["free"],
        ["free"],
    ]
    # another scope is independent; no scope id → no cooldown lookups
    assert sorted(
        ids(match_entries_v2(Ctx(latest_user_message="k", scope_id="s2"), [b], cooldowns=cd))
    ) == [
        "capped",
        "cool",
        "free",
    ]
    assert len(match_entries_v2(Ctx(latest_user_message="k"), [b], cooldowns=cd)) == 3


def test_turns_without_injections_still_advance_the_cooldown() -> None:
    cd = InMemoryCooldowns()
    b = book(E("cool", keywords=["k"], cooldown_turns=2))
    hit = Ctx(latest_user_message="k", scope_id="s")
    cd.record("s", "t1", match_entries_v2(hit, [b], cooldowns=cd))
    cd.record("s", "t2", [])
    cd.record("s", "t3", [])
    assert ids(match_entries_v2(hit, [b], cooldowns=cd)) == ["cool"]


def test_snapshot_and_enable_cooldown_switch() -> None:
    entry = E("cool", keywords=["k"], cooldown_turns=1)
    state = CooldownState(turn=1, last_injected={"cool": 1}, injections={"cool": 1})
    ctx = Ctx(latest_user_message="k")
    assert match_entries_v2(ctx, [book(entry)], cooldowns=state) == []
    off = WorldBookRecallConfig(enable_cooldown=False)
    assert ids(match_entries_v2(ctx, [book(entry)], config=off, cooldowns=state)) == ["cool"]
    with pytest.raises(InputError) as err:
        match_entries_v2(ctx, [book(entry)], cooldowns=42)  # type: ignore[arg-type]
    assert err.value.field == "cooldowns"


def test_results_keep_entry_identity_and_book_names() -> None:
    entry = E("e", keywords=["k"])
    b = book(entry, id="b9", name="九")
    [hit] = match_entries_v2(Ctx(latest_user_message="k"), [b])
    assert hit.entry is entry
    assert hit == WorldBookMatchResult(
        entry=entry, trigger_sources=["user"], matched_keywords=["k"], score=50
    )
    [desc] = describe_matches(Ctx(latest_user_message="k"), [b])
    assert (desc["world_book_id"], desc["world_book_name"]) == ("b9", "九")


def test_same_entries_in_two_books_are_separate_hits() -> None:
    ctx = Ctx(latest_user_message="k")
    books = [book(E("e", keywords=["k"])), book(E("e", keywords=["k"]), id="c")]
    assert len(match_entries_v2(ctx, books)) == 2
    assert [d["world_book_id"] for d in describe_matches(ctx, books)] == ["b", "c"]


def test_legacy_match_entries_wraps_v2() -> None:
    entries = [
        E("hi", keywords=["你好"], priority=5),
        E("low", keywords=["世界"], priority=1),
        E("hist", keywords=["你好"], trigger_sources=["history"]),
        E("big", keywords=["你好"], content="x" * 1000, priority=9),
    ]
    got = match_entries("你好世界", [book(*entries)], max_total_chars=1014)
    assert [e.id for e in got] == ["big", "hi"]
    assert [e.id for e in match_entries("你好世界", [book(*entries)])] == ["big", "hi", "low"]
    assert match_entries("你好", [book(*entries)], character_id="x") == [entries[3], entries[0]]
    assert match_entries("", [book(*entries)]) == []
    assert match_entries("你好", []) == []


def test_small_books_edited_in_place_are_rematched_exactly() -> None:
    cache = CompiledBookCache()
    entry = E("e", keywords=["龙"])
    b = book(entry, updated_at="2024-01-01T00:00:00")
    ctx = Ctx(latest_user_message="剑")
    assert match_entries_v2(ctx, [b], cache=cache) == []
    entry.keywords.append("剑")
    assert ids(match_entries_v2(ctx, [b], cache=cache)) == ["e"]


def test_large_books_are_cached_by_version() -> None:
    cache = CompiledBookCache()
    entries = [E(f"e{i}", keywords=[f"<{i}>"]) for i in range(600)]
    b = book(*entries, updated_at="v1")
    ctx = Ctx(latest_user_message="<599>")
    assert ids(match_entries_v2(ctx, [b], cache=cache)) == ["e599"]
    assert ids(match_entries_v2(ctx, [b.model_copy()], cache=cache)) == ["e599"]
    assert (cache.misses, cache.hits) == (1, 1)
    entries[0].keywords = ["<599>"]
    newer = book(*entries, updated_at="v2")
    assert ids(match_entries_v2(ctx, [newer], cache=cache)) == ["e0", "e599"]
    assert cache.misses == 2


def test_bad_inputs_name_the_field() -> None:
    with pytest.raises(InputError) as err:
        match_entries_v2(Ctx(), [object()])  # type: ignore[list-item]
    assert err.value.field == "world_books[0]"
    with pytest.raises(InputError) as err:
        match_entries_v2("hello", [])  # type: ignore[arg-type]
    assert err.value.field == "context"
    # dicts are validated into the models
    got = match_entries_v2(
        {"latest_user_message": "k"},
        [{"entries": [{"id": "e", "keywords": ["k"], "content": "c"}]}],
    )
    assert ids(got) == ["e"]
    with pytest.raises(InputError) as err:
        match_entries_v2({"latest_user_message": 3}, [])
    assert "latest_user_message" in str(err.value)


def test_recall_config_validates() -> None:
    with pytest.raises(ValidationError, match="max_entries"):
        WorldBookRecallConfig(max_entries=-1)
