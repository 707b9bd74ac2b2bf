"""Consolidation rules: ADD / UPDATE / DELETE / NOOP on Chinese and English memories."""

from __future__ import annotations

from nekoflow.memory.consolidate import Decision, Existing, decide, facts_of, jaccard


def _ex(i: int, content: str, title: str = "") -> Existing:
    return Existing(id=i, facts=facts_of(title, content), importance=0.5)


def test_slots_are_read_in_chinese_and_english() -> None:
    cases = {
        "我叫小明": ("name", "小明"),
        "我叫小明呀": ("name", "小明"),
        "你可以叫我阿明": ("name", "阿明"),
        "我的名字是小红。": ("name", "小红"),
        "My name is Alice.": ("name", "alice"),
        "I'm 17 years old": ("age", "17"),
        "我今年18岁": ("age", "18"),
        "I live in New York, near the park": ("home", "new york"),
        "我住在杭州": ("home", "杭州"),
        "我最喜欢的水果是草莓": ("favourite:水果", "草莓"),
        "my favorite color is blue": ("favourite:color", "blue"),
    }
    for text, (slot, value) in cases.items():
        f = facts_of("", text)
        assert (f.slot, f.value) == (slot, value), text
        assert f.key == f"slot:{slot}"


def test_no_slot_from_someone_else_or_the_character() -> None:
    assert facts_of("", "我叫他走开").slot is None
    assert facts_of("", "你叫小明吗").slot is None
    rule = facts_of("对话", "用户:今天好累\n角色:我叫小雪,陪你聊聊")
    assert rule.slot is None
    assert rule.key == "t:对话"
    assert facts_of("对话", "用户:我叫小明\n角色:你好小明,我叫小雪").value == "小明"


def test_first_memory_is_added() -> None:
    assert decide(facts_of("", "我叫小明"), []) == [Decision("ADD")]


def test_same_slot_same_value_word_for_word_is_noop() -> None:
    assert decide(facts_of("", "我叫小明"), [_ex(4, "我叫小明")]) == [Decision("NOOP", 4)]


def test_same_slot_same_value_other_words_is_update() -> None:
    assert decide(facts_of("", "对了,我叫小明"), [_ex(4, "我叫小明")]) == [Decision("UPDATE", 4)]


def test_contradiction_supersedes_every_old_value_and_adds() -> None:
    existing = [_ex(3, "我叫小红"), _ex(4, "我叫小红呀"), _ex(5, "我住在杭州")]
    assert decide(facts_of("", "我叫小明"), existing) == [
        Decision("DELETE", 3),
        Decision("DELETE", 4),
        Decision("ADD"),
    ]
    assert decide(facts_of("", "Call me Bob"), [_ex(1, "my name is Alice")]) == [
        Decision("DELETE", 1),
        Decision("ADD"),
    ]


def test_other_favourites_do_not_collide() -> None:
    existing = [_ex(1, "我最喜欢的水果是草莓")]
    assert decide(facts_of("", "我最喜欢的颜色是蓝色"), existing) == [Decision("ADD")]


def test_a_near_restatement_without_slot_updates_the_closest() -> None:
    existing = [_ex(1, "用户答应周末带小猫去看海"), _ex(2, "用户喜欢下雨天")]
    assert decide(facts_of("", "用户答应周末带小猫去看海!"), existing) == [Decision("UPDATE", 1)]
    assert decide(facts_of("", "用户答应周末带小猫去看海"), existing) == [Decision("NOOP", 1)]
    assert decide(facts_of("", "用户讨厌打雷"), existing) == [Decision("ADD")]


def test_english_restatement_and_distinct_fact() -> None:
    existing = [_ex(7, "Alice promised to bring the red umbrella on Friday")]
    again = facts_of("", "Alice promised to bring the red umbrella on Friday!!")
    assert decide(again, existing) == [Decision("UPDATE", 7)]
    assert decide(facts_of("", "Bob hates umbrellas"), existing) == [Decision("ADD")]


def test_jaccard() -> None:
    assert jaccard(frozenset("ab"), frozenset("bc")) == 1 / 3
    assert jaccard(frozenset(), frozenset()) == 0.0


def test_questions_and_false_triggers_hold_no_slot_and_values_are_trimmed() -> None:
    for text in ("你还记得我叫什么吗?", "我叫了个外卖", "我现在住在哪座城市呀?", "what's my name?"):
        assert facts_of("", f"用户:{text}\n角色:嗯").slot is None, text
    assert facts_of("", "用户:叫我小满就好\n角色:好").value == "小满"
    restated = decide(
        facts_of("", "用户:叫我小满就好\n角色:好"), [_ex(2, "用户:我叫小满\n角色:嗯")]
    )
    assert [d.op for d in restated] == ["UPDATE"]  # the same value: not a contradiction


def test_a_restated_fact_is_a_noop_on_the_stated_fact_whatever_came_after() -> None:
    fact = _ex(1, "用户的名字:小明\n原话:我叫小明", title="用户的名字")
    turn = _ex(2, "用户:谢谢你,我叫小明\n角色:嗯")
    again = facts_of("用户的名字", "用户的名字:小明\n原话:谢谢你,我叫小明")
    assert decide(again, [fact, turn]) == [Decision("NOOP", 1)]
    assert decide(again, [turn]) == [Decision("ADD")]  # no stated fact yet: it is written
    other = facts_of("用户的名字", "用户的名字:小红\n原话:我叫小红")
    assert decide(other, [fact, turn]) == [
        Decision("DELETE", 1),
        Decision("DELETE", 2),
        Decision("ADD"),
    ]
