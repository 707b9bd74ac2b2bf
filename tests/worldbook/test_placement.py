"""place_lore: each matched entry's position (SillyTavern's meanings) and the placement budget."""

from __future__ import annotations

from nekoflow.worldbook import DepthInsert, WorldBookEntry, WorldBookMatchResult, place_lore


def _r(entry_id: str, content: str, priority: int = 0, **rules: object) -> WorldBookMatchResult:
    entry = WorldBookEntry(id=entry_id, content=content, priority=priority, rules=rules)
    return WorldBookMatchResult(entry=entry)


def test_positions() -> None:
    placement, dropped = place_lore(
        [
            _r("a", "seed entry"),
            _r("b", "after", position="after_char"),
            _r("c", "deep", 7, position="at_depth", depth=2, role="assistant"),
            _r("d", "note", position="an_top"),
            _r("e", "examples", position="em_bottom"),
            _r("f", "before", position="before_char"),
        ],
        author_note_depth=3,
    )
    assert dropped == []
    # SillyTavern's prompt order: ascending insertion order; equal orders in recall order.
    assert placement.before_char == ["seed entry", "before"]
    assert placement.after_char == ["after", "examples"]
    assert placement.at_depth == [
        DepthInsert(depth=3, role="system", content="note", order=0),
        DepthInsert(depth=2, role="assistant", content="deep", order=7),
    ]


def test_each_position_lists_its_entries_by_ascending_insertion_order() -> None:
    """Recall ranks by score (highest first) and the budgets walk that ranking; the prompt
    takes SillyTavern's order: the lower an entry's order, the earlier it is placed."""
    placement, _ = place_lore(
        [
            _r("hi", "order 150", 150, position="at_depth", depth=0),
            _r("b40", "before 40", 40, position="before_char"),
            _r("mid", "order 141", 141, position="at_depth", depth=0),
            _r("b30", "before 30", 30, position="before_char"),
            _r("a5", "after 5", 5, position="after_char"),
            _r("lo", "order 140", 140, position="at_depth", depth=0),
            _r("a9", "after 9", 9, position="after_char"),
        ]
    )
    assert placement.before_char == ["before 30", "before 40"]
    assert placement.after_char == ["after 5", "after 9"]
    assert [i.content for i in placement.at_depth] == ["order 140", "order 141", "order 150"]


def test_blank_and_token_budget_drops_with_reason() -> None:
    placement, dropped = place_lore(
        [_r("a", "  "), _r("b", "白" * 10), _r("c", "塔" * 5), _r("d", "x")], max_tokens=7
    )
    assert placement.before_char == ["塔" * 5, "x"]
    assert [(d.entry_id, d.reason) for d in dropped] == [("a", "blank"), ("b", "over_budget")]
    assert (dropped[1].needed, dropped[1].available, dropped[1].unit) == (10, 7, "tokens")


def test_cut_content_is_placed_cut() -> None:
    result = _r("a", "abcdef")
    result.cut_to = 3
    placement, _ = place_lore([result])
    assert placement.before_char == ["abc"]
    assert placement.is_empty() is False
