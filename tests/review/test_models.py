"""Review models: the seed's fields and defaults, validation that names the field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from nekoflow.review import (
    MemoryItem,
    PlotUpdate,
    RelationshipDelta,
    ReviewInput,
    ReviewOutput,
    ReviewScore,
    WorldBookUpdate,
    real_time_context,
)
from tests.seed_data import SEED_REVIEW_INPUT


def test_seed_examples_construct() -> None:
    ReviewScore(
        character_fidelity=0.8,
        immersion=0.7,
        relationship_progress=0.5,
        story_progress=0.6,
        memory_value=0.4,
        world_consistency=0.9,
        user_engagement=0.6,
        risk=0.1,
    )
    item = MemoryItem(
        target="user",
        mem_type="relationship",
        title="用户表达了喜欢",
        content="用户:我很喜欢你\n角色:谢谢你的喜欢!",
        importance=0.7,
        ttl="long",
    )
    d = RelationshipDelta(
        affection=2,
        trust=1,
        familiarity=1,
        dependency=0,
        security=0,
        jealousy=0,
        reason="用户表达了亲密情感;选择了 important 级剧情分支。",
    )
    assert d.source == "review_pipeline" and d.plot_node_id is None
    inp = ReviewInput(**SEED_REVIEW_INPUT)
    assert inp.group_id is None and inp.recent_messages == [] and inp.tool_calls == []
    out = ReviewOutput(
        should_write_memory=True,
        plot_update=PlotUpdate(should_create_node=True, level="important"),
        scores=ReviewScore(),
        source="rule",
        skipped=False,
    )
    assert out.world_book_update is None and out.memory_items == []
    full = ReviewOutput(
        should_write_memory=True, memory_items=[item], relationship_delta=d, source="rule"
    )
    assert full.memory_items[0].ttl == "long" and full.relationship_delta == d
    assert WorldBookUpdate().should_update is False


def test_ai_reply_alias() -> None:
    inp = ReviewInput(
        conversation_id="c",
        character_id="x",
        user_id="u",
        user_message="我今天很开心",
        ai_reply="太好了!",
    )
    assert inp.assistant_message == "太好了!"


def test_numeric_ids_become_text() -> None:
    assert ReviewInput(user_id=12345, group_id=678).user_id == "12345"


def _field_of(exc: ValidationError) -> str:
    return ".".join(str(p) for p in exc.errors()[0]["loc"])


@pytest.mark.parametrize("field", list(ReviewScore.model_fields))
@pytest.mark.parametrize("value", [-0.01, 1.01])
def test_scores_out_of_range(field: str, value: float) -> None:
    with pytest.raises(ValidationError) as ei:
        ReviewScore(**{field: value})
    assert _field_of(ei.value) == field


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"target": "nobody"}, "target"),
        ({"mem_type": "forever"}, "mem_type"),
        ({"ttl": "eternal"}, "ttl"),
        ({"importance": 2}, "importance"),
    ],
)
def test_memory_item_enums(kwargs: dict, field: str) -> None:
    with pytest.raises(ValidationError) as ei:
        MemoryItem(**kwargs)
    assert _field_of(ei.value) == field


def test_plot_level_validated() -> None:
    with pytest.raises(ValidationError) as ei:
        PlotUpdate(level="epic")
    assert _field_of(ei.value) == "level"


def test_delta_wrong_type() -> None:
    with pytest.raises(ValidationError) as ei:
        RelationshipDelta(affection="lots")
    assert _field_of(ei.value) == "affection"


def test_unknown_choice_level_names_field() -> None:
    with pytest.raises(ValidationError, match=r"selected_choice\.level"):
        ReviewInput(selected_choice={"level": "epic"})


def test_unknown_continuity_level_names_field() -> None:
    with pytest.raises(ValidationError, match=r"real_time_context\.continuity_level"):
        ReviewInput(real_time_context={"continuity_level": "forever"})


def test_wrong_types_name_field() -> None:
    with pytest.raises(ValidationError) as ei:
        ReviewInput(user_message=["not", "text"])
    assert _field_of(ei.value) == "user_message"
    with pytest.raises(ValidationError) as ei:
        ReviewInput(recent_messages="nope")
    assert _field_of(ei.value) == "recent_messages"


def test_unknown_field_is_rejected() -> None:
    with pytest.raises(ValidationError, match="user_mesage"):
        ReviewInput(user_mesage="typo")


def test_real_time_context_model_is_accepted() -> None:
    rtc = real_time_context("2026-01-01T00:00:00Z", "2026-01-05T00:00:00Z")
    inp = ReviewInput(real_time_context=rtc)
    assert inp.continuity_level == "days"
    assert inp.real_time_context["elapsed_label"] == "4天"


def test_relationship_delta_integer_ids_are_kept_as_text() -> None:
    from nekoflow.review import RelationshipDelta

    d = RelationshipDelta(affection=1, plot_node_id=42, conversation_id=7)
    assert (d.plot_node_id, d.conversation_id) == ("42", "7")
