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
    assert placement.before_char == ["seed entry", "before"]
    assert placement.after_char == ["after", "examples"]
    assert placement.at_depth == [
        DepthInsert(depth=2, role="assistant", content="deep", order=7),
        DepthInsert(depth=3, role="system", content="note", order=0),
    ]


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
