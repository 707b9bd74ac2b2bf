"""LLM review mode through the turn stages (SQLite and PostgreSQL, a loopback OpenAI-compatible
server): the review sees the memories that went into the prompt, by id, and its decision —
this new fact replaces that one — is what apply_deltas carries out, once."""

from __future__ import annotations

import json
from typing import Any

from sqlmodel import Session, col, select

from nekoflow.llm.openai_client import OpenAIChatModel
from nekoflow.review import ReviewPipeline
from nekoflow.review.autostate import InMemoryAutoState
from nekoflow.storage.turns import MemoryRecord
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline

from .llm_server import FakeLLM, completion


def event(text: str) -> dict:
    return {"session_id": "c1", "message": text, "user_id": "u1", "display_name": "莱姆"}


def review_answer(items: list[dict[str, Any]]) -> dict[str, Any]:
    body = {
        "should_write_memory": bool(items),
        "memory_items": items,
        "relationship_delta": {"affection": 1, "reason": "聊得开心"},
        "skipped": False,
    }
    return completion(json.dumps(body, ensure_ascii=False))


def test_the_llm_review_replaces_a_fact_it_was_shown(deps) -> None:
    shown: list[list[dict]] = []

    def script(body: dict, n: int):
        system = body["messages"][0]["content"]
        if "审查器" not in system:
            return 200, completion("【开心】记住啦。"), {}, 0.0
        turn = json.loads(body["messages"][-1]["content"])
        shown.append(turn["existing_memories"])
        if "草莓" in turn["user_message"]:
            item = {"content": "用户最喜欢草莓", "importance": 0.7, "ttl": "long", "op": "ADD"}
            return 200, review_answer([item]), {}, 0.0
        berry = next(m["id"] for m in turn["existing_memories"] if "草莓" in m["content"])
        item = {"content": "用户改口了:现在最爱蓝莓", "importance": 0.7, "ttl": "long"}
        return 200, review_answer([item | {"op": "DELETE", "memory_id": berry}]), {}, 0.0

    with FakeLLM(script) as llm:
        model = OpenAIChatModel(llm.base_url, "fake-model", api_key="sk-test")
        deps.chat_model = model
        deps.review = ReviewPipeline(mode="llm", llm=model, autostate=InMemoryAutoState())
        first = submit_turn(deps, "web", event("我最喜欢草莓了"))
        assert run_inline(deps, first.turn_id, sleep=False) == "ok"
        second = submit_turn(deps, "web", event("不过说到水果,我现在爱上蓝莓了"))
        assert run_inline(deps, second.turn_id, sleep=False) == "ok"
    assert shown[0] == []  # nothing to show yet
    assert [m["content"] for m in shown[1]] == ["用户最喜欢草莓"]  # ids and text, by id
    with Session(deps.engine) as s:
        rows = s.exec(select(MemoryRecord).order_by(col(MemoryRecord.id))).all()
    assert [(r.content, r.superseded_by is None) for r in rows] == [
        ("用户最喜欢草莓", False),  # kept as history, never retrieved again
        ("用户改口了:现在最爱蓝莓", True),
    ]
    assert rows[0].superseded_by == rows[1].id
