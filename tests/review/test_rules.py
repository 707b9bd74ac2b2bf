"""Every rule of SPEC "Review": keywords, deltas, memory value and write, suggestions, scores."""

from __future__ import annotations

import pytest

from nekoflow.review import (
    InMemoryAutoState,
    ReviewInput,
    ReviewKeywords,
    run_rule_review,
    total_delta,
)
from nekoflow.review.rules import memory_value, relationship_delta, user_engagement


def review(**kw):
    return run_rule_review(ReviewInput(**kw), autostate=InMemoryAutoState())


def choice(level: str, text: str = "选项") -> dict:
    return {"level": level, "text": text}


def gap(level: str, label: str = "3天") -> dict:
    return {"continuity_level": level, "elapsed_label": label}


# --- relationship delta -------------------------------------------------------------------


def test_plain_turn_gives_familiarity_one_and_nothing_else() -> None:
    d = review(user_message="今天天气不错", assistant_message="是呀").relationship_delta
    assert (d.affection, d.trust, d.familiarity) == (0, 0, 1)
    assert (d.dependency, d.security, d.jealousy) == (0, 0, 0)
    assert d.source == "review_pipeline"


def test_delta_always_produced_even_for_empty_turn() -> None:
    out = review()
    assert out.relationship_delta is not None
    assert out.relationship_delta.familiarity == 1


@pytest.mark.parametrize(
    "word",
    ["谢谢", "感谢", "信任", "放心", "我相信你", "靠你", "我懂了", "我明白了", "承诺", "约定"],
)
def test_trust_keywords_in_user_message(word: str) -> None:
    assert review(user_message=f"嗯,{word}。").relationship_delta.trust == 1


def test_trust_only_reads_user_message() -> None:
    assert review(user_message="嗯", assistant_message="谢谢你").relationship_delta.trust == 0


@pytest.mark.parametrize(
    "word", ["喜欢", "爱", "想你", "好想", "亲爱", "宝贝", "心动", "感动", "暖", "我爱"]
)
def test_affection_keywords(word: str) -> None:
    assert review(user_message=f"啊{word}").relationship_delta.affection == 1


def test_affection_reads_assistant_message_too() -> None:
    d = review(user_message="你好", assistant_message="我好想你").relationship_delta
    assert d.affection == 1


def test_affection_counts_once_when_both_sides_match() -> None:
    d = review(user_message="我爱你", assistant_message="我也爱你").relationship_delta
    assert d.affection == 1


@pytest.mark.parametrize(
    "word", ["讨厌", "烦死", "滚", "生气", "失望", "算了", "拜拜", "再见", "冷漠", "无聊"]
)
def test_negative_keywords_lower_affection(word: str) -> None:
    assert review(user_message=f"{word}!").relationship_delta.affection == -1


def test_negative_only_reads_user_message() -> None:
    assert review(user_message="嗯", assistant_message="再见").relationship_delta.affection == 0


def test_affection_and_negative_cancel() -> None:
    assert review(user_message="喜欢你但是生气").relationship_delta.affection == 0


def test_keywords_are_case_insensitive_regex() -> None:
    kw = ReviewKeywords(trust="thanks?|trust", affection="love", negative="hate")
    out = run_rule_review(
        ReviewInput(user_message="THANK you, I LOVE it", assistant_message=""),
        keywords=kw,
        autostate=InMemoryAutoState(),
    )
    assert (out.relationship_delta.trust, out.relationship_delta.affection) == (1, 1)


def test_keywords_accept_word_lists_literally() -> None:
    kw = ReviewKeywords(trust=["a.b"], affection=[], negative=["x"])
    assert kw.trust_re.search("a.b") and not kw.trust_re.search("axb")
    out = run_rule_review(
        ReviewInput(user_message="喜欢"), keywords=kw, autostate=InMemoryAutoState()
    )
    assert out.relationship_delta.affection == 0  # an empty list matches nothing


def test_bad_keyword_pattern_names_field() -> None:
    with pytest.raises(ValueError, match="negative"):
        ReviewKeywords(negative="(")


@pytest.mark.parametrize(
    ("level", "aff", "trust"),
    [("normal", 0, 0), ("important", 1, 1), ("turning_point", 2, 1), ("ending", 0, 0)],
)
def test_choice_levels(level: str, aff: int, trust: int) -> None:
    d = review(user_message="走吧", selected_choice=choice(level)).relationship_delta
    assert (d.affection, d.trust) == (aff, trust)


@pytest.mark.parametrize(
    ("level", "fam"),
    [
        ("first_contact", 1),
        ("continuous", 1),
        ("short_gap", 1),
        ("same_day_gap", 1),
        ("days", 2),
        ("long_absence", 2),
    ],
)
def test_long_gaps_add_familiarity(level: str, fam: int) -> None:
    d = review(user_message="在吗", real_time_context=gap(level)).relationship_delta
    assert d.familiarity == fam


def test_total_delta_uses_absolute_values() -> None:
    d = relationship_delta(ReviewInput(user_message="讨厌", selected_choice=choice("normal")))
    assert d.affection == -1
    assert total_delta(d) == 2
    d2 = relationship_delta(
        ReviewInput(user_message="谢谢,喜欢", selected_choice=choice("turning_point"))
    )
    assert (d2.affection, d2.trust, d2.familiarity) == (3, 2, 1)
    assert total_delta(d2) == 6


# --- memory value ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "value"), [("turning_point", 0.9), ("important", 0.8), ("ending", 0.95)]
)
def test_choice_levels_fix_memory_value_without_bonuses(level: str, value: float) -> None:
    inp = ReviewInput(
        user_message="谢谢,我喜欢你" + "啊" * 120,
        selected_choice=choice(level),
        real_time_context=gap("long_absence"),
    )
    assert memory_value(inp) == value


def test_normal_choice_is_not_fixed() -> None:
    assert memory_value(ReviewInput(user_message="嗯", selected_choice=choice("normal"))) == 0


@pytest.mark.parametrize(("n", "value"), [(50, 0.0), (51, 0.2), (100, 0.2), (101, 0.3)])
def test_length_bonus(n: int, value: float) -> None:
    assert memory_value(ReviewInput(user_message="啊" * n)) == value


def test_trust_and_affection_bonus_read_user_text_only() -> None:
    assert memory_value(ReviewInput(user_message="谢谢")) == 0.2
    assert memory_value(ReviewInput(user_message="喜欢")) == 0.2
    assert memory_value(ReviewInput(user_message="谢谢,喜欢")) == 0.4
    assert memory_value(ReviewInput(user_message="嗯", assistant_message="谢谢,喜欢")) == 0.0


def test_gap_bonuses_and_cap() -> None:
    assert memory_value(ReviewInput(user_message="嗯", real_time_context=gap("days"))) == 0.65
    assert (
        memory_value(ReviewInput(user_message="嗯", real_time_context=gap("long_absence"))) == 0.75
    )
    assert memory_value(ReviewInput(user_message="嗯", real_time_context=gap("same_day_gap"))) == 0
    big = ReviewInput(user_message="谢谢喜欢" + "啊" * 200, real_time_context=gap("long_absence"))
    assert memory_value(big) == 1.0


# --- memory write ---------------------------------------------------------------------------


def test_no_write_for_small_talk() -> None:
    out = review(user_message="吃了吗", assistant_message="吃了")
    assert not out.should_write_memory and out.memory_items == []


def test_write_when_value_reaches_threshold() -> None:
    # 0.3 (length) + 0.2 (trust) + 0.2 (affection) = 0.7 ≥ 0.65
    out = review(user_message="谢谢你,我喜欢你" + "啊" * 100)
    assert out.scores.memory_value == pytest.approx(0.7)
    assert out.should_write_memory


def test_value_just_below_threshold_with_small_delta_does_not_write() -> None:
    out = review(user_message="谢谢" + "啊" * 60)  # 0.2 + 0.2 = 0.4, total delta 2
    assert not out.should_write_memory


@pytest.mark.parametrize("level", ["important", "turning_point", "ending"])
def test_write_for_significant_choices(level: str) -> None:
    assert review(user_message="好", selected_choice=choice(level)).should_write_memory


def test_write_when_total_delta_reaches_three() -> None:
    # trust 1 + affection 1 + familiarity 1 = 3; memory value 0.4 alone would not write
    out = review(user_message="谢谢,喜欢")
    assert total_delta(out.relationship_delta) == 3
    assert out.should_write_memory


@pytest.mark.parametrize("level", ["days", "long_absence"])
def test_write_after_long_gap(level: str) -> None:
    assert review(user_message="我回来了", real_time_context=gap(level)).should_write_memory


def test_no_write_without_text_even_when_conditions_hold() -> None:
    out = review(user_message="  ", assistant_message="", selected_choice=choice("ending"))
    assert not out.should_write_memory and out.memory_items == []


def test_memory_item_shape_for_important_choice() -> None:
    out = review(
        user_message="我会一直陪着你",
        assistant_message="嗯,约好了",
        selected_choice=choice("important", "答应留下来"),
    )
    [item] = out.memory_items
    assert item.target == "user"
    assert item.mem_type == "relationship"
    assert item.title == "答应留下来"
    assert item.content == "用户:我会一直陪着你\n角色:嗯,约好了"
    assert item.importance == 0.8
    assert item.ttl == "long"


@pytest.mark.parametrize(
    ("level", "mem_type", "ttl"),
    [
        ("turning_point", "event", "long"),
        ("ending", "short", "long"),
        ("important", "relationship", "long"),
    ],
)
def test_memory_type_and_ttl_by_level(level: str, mem_type: str, ttl: str) -> None:
    [item] = review(user_message="好", selected_choice=choice(level)).memory_items
    assert (item.mem_type, item.ttl) == (mem_type, ttl)


def test_short_ttl_below_point_eight() -> None:
    [item] = review(user_message="谢谢,喜欢").memory_items  # value 0.4, written by delta
    assert (item.mem_type, item.ttl, item.importance) == ("short", "short", 0.4)


def test_long_ttl_at_point_eight_without_choice() -> None:
    [item] = review(user_message="谢谢喜欢", real_time_context=gap("long_absence")).memory_items
    assert item.importance == 1.0 and item.ttl == "long"


def test_title_falls_back_to_user_message_then_default() -> None:
    long_msg = "一" * 40
    [item] = review(user_message=long_msg, selected_choice=choice("important", "")).memory_items
    assert item.title == "一" * 30
    [item2] = review(
        user_message="", assistant_message="嗯", selected_choice=choice("ending", "")
    ).memory_items
    assert item2.title == "对话记录"


def test_content_is_truncated_to_200_chars_each() -> None:
    [item] = review(
        user_message="u" * 300, assistant_message="a" * 300, selected_choice=choice("important")
    ).memory_items
    assert item.content == "用户:" + "u" * 200 + "\n角色:" + "a" * 200


def test_content_has_time_gap_line_when_there_was_a_gap() -> None:
    [item] = review(
        user_message="我回来了", assistant_message="欢迎", real_time_context=gap("days", "3天2小时")
    ).memory_items
    assert item.content == "现实时间间隔:3天2小时\n用户:我回来了\n角色:欢迎"
    [item2] = review(
        user_message="好",
        selected_choice=choice("important"),
        real_time_context=gap("continuous", "5分钟"),
    ).memory_items
    assert not item2.content.startswith("现实时间间隔")


# --- plot and world-book suggestions --------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "plot", "wb"),
    [
        (None, False, False),
        ("normal", False, False),
        ("important", True, False),
        ("turning_point", True, True),
        ("ending", True, True),
    ],
)
def test_plot_and_world_book_suggestions(level: str | None, plot: bool, wb: bool) -> None:
    out = review(user_message="走", selected_choice=choice(level, "进入白塔") if level else None)
    assert (out.plot_update is not None) is plot
    assert (out.world_book_update is not None) is wb
    if plot:
        assert out.plot_update.should_create_node and out.plot_update.level == level
        assert out.plot_update.title == "进入白塔"
    if wb:
        assert out.world_book_update.should_update and out.world_book_update.entry_title


# --- scores ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "value"),
    [(None, 0.1), ("normal", 0.2), ("important", 0.6), ("turning_point", 0.9), ("ending", 1.0)],
)
def test_story_progress(level: str | None, value: float) -> None:
    out = review(user_message="嗯", selected_choice=choice(level) if level else None)
    assert out.scores.story_progress == value


def test_relationship_progress_is_total_over_five_capped() -> None:
    assert review(user_message="嗯").scores.relationship_progress == pytest.approx(0.2)
    out = review(user_message="谢谢喜欢", selected_choice=choice("turning_point"))
    assert out.scores.relationship_progress == 1.0


@pytest.mark.parametrize(
    ("n", "value"), [(0, 0.3), (30, 0.3), (31, 0.5), (80, 0.5), (81, 0.7), (200, 0.7), (201, 0.9)]
)
def test_user_engagement(n: int, value: float) -> None:
    assert user_engagement("x" * n) == value


def test_quality_scores_zero_without_autostate_entry() -> None:
    s = review(character_id="c", user_id="u", conversation_id="v", user_message="嗯").scores
    assert (s.character_fidelity, s.immersion, s.world_consistency, s.risk) == (0, 0, 0, 0)


def test_quality_scores_come_from_autostate_for_that_triple() -> None:
    cache = InMemoryAutoState()
    cache.set(
        "c",
        "u",
        "v",
        {
            "character_fidelity": 0.8,
            "immersion": 0.7,
            "world_consistency": 0.9,
            "risk": 0.1,
            "memory_value": 0.99,
        },
    )
    s = run_rule_review(
        ReviewInput(character_id="c", user_id="u", conversation_id="v", user_message="嗯"),
        autostate=cache,
    ).scores
    assert (s.character_fidelity, s.immersion, s.world_consistency, s.risk) == (0.8, 0.7, 0.9, 0.1)
    assert s.memory_value == 0.0  # rule-computed, not taken from the cache
    other = run_rule_review(
        ReviewInput(character_id="c", user_id="u2", conversation_id="v"), autostate=cache
    ).scores
    assert other.character_fidelity == 0.0


# --- skip -----------------------------------------------------------------------------------


def test_small_talk_is_skipped() -> None:
    out = review(user_message="吃了吗", assistant_message="吃了")
    assert out.skipped and out.source == "rule"


def test_any_choice_prevents_skip() -> None:
    assert not review(user_message="嗯", selected_choice=choice("normal")).skipped


def test_memory_value_point_three_prevents_skip() -> None:
    out = review(user_message="啊" * 101)  # value 0.3, no write
    assert not out.should_write_memory
    assert not out.skipped


def test_memory_value_point_two_is_still_skipped() -> None:
    assert review(user_message="谢谢").skipped  # value 0.2, total delta 2


def test_long_gap_prevents_skip() -> None:
    assert not review(user_message="嗯", real_time_context=gap("days")).skipped


def test_memory_write_prevents_skip() -> None:
    assert not review(user_message="谢谢喜欢").skipped


def test_accepts_plain_dict_input() -> None:
    out = run_rule_review(
        {"user_message": "谢谢", "ai_reply": "不客气"}, autostate=InMemoryAutoState()
    )
    assert out.relationship_delta.trust == 1
