"""LLM review mode asks the model for the facts the user stated (``facts``), validates them and
falls back to the rule review's facts when the model gives none."""

from __future__ import annotations

import json

from nekoflow.review import ReviewPipeline
from nekoflow.review.autostate import InMemoryAutoState
from nekoflow.review.llm_review import SYSTEM_PROMPT, parse_review
from nekoflow.review.rules import run_rule_review

TURN = {"user_message": "叫我小满就好,我的猫叫年糕", "ai_reply": "好呀"}


def _pipeline(reply: dict) -> ReviewPipeline:
    return ReviewPipeline(
        mode="llm", llm=lambda _m: json.dumps(reply), autostate=InMemoryAutoState()
    )


def test_the_prompt_asks_for_facts() -> None:
    assert '"facts"' in SYSTEM_PROMPT and "user.pet." in SYSTEM_PROMPT


def test_the_models_facts_are_kept_and_bad_ones_dropped() -> None:
    reply = {
        "facts": [
            {"slot": "user.nickname", "value": " 小满 ", "sentence": "叫我小满就好"},
            {"slot": "user.pet.cat.name", "value": "年糕", "change": False},
            {"slot": "character.name", "value": "钦灵"},  # not about the user
            {"slot": "user.age", "value": ""},  # no value
            "年糕",  # not an object
        ]
    }
    out = _pipeline(reply).run(TURN)
    assert out.source == "llm" and out.fallback_reason is None
    assert [(f.slot, f.value) for f in out.facts] == [
        ("user.nickname", "小满"),
        ("user.pet.cat.name", "年糕"),
    ]


def test_the_facts_are_the_models_alone() -> None:
    rule = run_rule_review(TURN, autostate=InMemoryAutoState())
    assert [(f.slot, f.value) for f in rule.facts] == [
        ("user.nickname", "小满"),
        ("user.pet.cat.name", "年糕"),
    ]
    assert parse_review("{}", rule).facts == []  # the model stated none: none are written
    assert parse_review('{"facts": "年糕"}', rule).facts == []  # not a list: none


def test_old_stored_outputs_still_validate() -> None:
    out = parse_review(json.dumps({"should_write_memory": False, "skipped": True}))
    assert out.facts == []
