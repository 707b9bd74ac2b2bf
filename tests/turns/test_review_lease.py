"""An LLM review holds the turn's model-call lease: two chains of one turn reviewing at the same
moment ask the model once (SQLite and PostgreSQL, a loopback OpenAI-compatible server)."""

from __future__ import annotations

import importlib
import json
import threading
import time
from typing import Any

from sqlmodel import Session, select

from nekoflow.llm.openai_client import OpenAIChatModel
from nekoflow.review import ReviewPipeline
from nekoflow.review.autostate import InMemoryAutoState
from nekoflow.review.models import ReviewOutput
from nekoflow.storage.turns import TurnRun
from nekoflow.storage.usage import LLMUsage
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import Outcome, execute_stage
from nekoflow.turns.stages import STAGE_FUNCS
from nekoflow.usage.meter import MeteredChatModel

from .llm_server import FakeLLM, completion

REVIEW = {
    "should_write_memory": False,
    "memory_items": [],
    "relationship_delta": {"affection": 1, "reason": "聊得开心"},
    "skipped": False,
}


def _event(text: str) -> dict[str, str]:
    return {"session_id": "c1", "message": text, "user_id": "u1", "display_name": "莱姆"}


def _reviewing(deps: TurnDeps, llm: FakeLLM) -> str:
    """A turn in LLM review mode with its first four stages done; its id."""
    model = OpenAIChatModel(llm.base_url, "fake-model", api_key="sk-test")
    deps.chat_model = model
    deps.review = ReviewPipeline(
        mode="llm", llm=MeteredChatModel(model), autostate=InMemoryAutoState()
    )
    turn_id = submit_turn(deps, "web", _event("今天去海边捡了好多贝壳")).turn_id
    for stage in ("dispatch", "before_turn", "llm_call", "memory_build"):
        STAGE_FUNCS[stage](deps, turn_id)
    return turn_id


def _script(review_delay: float, reviews: list[int]) -> Any:
    def script(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any], dict, float]:
        if "审查器" not in body["messages"][0]["content"]:
            return 200, completion("【开心】好厉害!"), {}, 0.0
        reviews.append(n)
        return 200, completion(json.dumps(REVIEW, ensure_ascii=False)), {}, review_delay

    return script


def _review_usage(deps: TurnDeps, turn_id: str) -> list[LLMUsage]:
    with Session(deps.engine) as s:
        rows = s.exec(select(LLMUsage).where(LLMUsage.turn_id == turn_id)).all()
    return [r for r in rows if r.kind == "review"]


def test_two_chains_reviewing_at_once_ask_the_model_once(deps: TurnDeps) -> None:
    reviews: list[int] = []
    with FakeLLM(_script(0.8, reviews)) as llm:
        turn_id = _reviewing(deps, llm)
        outcomes: dict[str, list[Outcome]] = {"a": [], "b": []}

        def chain(name: str) -> None:
            while True:  # as the task would: retry a busy stage (here without the wait)
                outcome = execute_stage(deps, "review", turn_id)
                outcomes[name].append(outcome)
                if outcome.kind != "retry":
                    return
                time.sleep(0.1)

        first = threading.Thread(target=chain, args=("a",))
        first.start()
        deadline = time.monotonic() + 10
        while not reviews and time.monotonic() < deadline:  # chain a's call is in flight
            time.sleep(0.01)
        chain("b")
        first.join(timeout=30)
    assert len(reviews) == 1  # one model call for the turn's review
    assert outcomes["a"][-1].kind == "ok" and outcomes["b"][-1].kind == "ok"
    assert outcomes["b"][0].kind == "retry" and "in flight" in outcomes["b"][0].reason
    assert outcomes["a"][-1].result == outcomes["b"][-1].result  # the one stored review
    assert len(_review_usage(deps, turn_id)) == 1  # paid for once
    with Session(deps.engine) as s:
        run = s.get(TurnRun, turn_id)
        assert run.llm_lease_owner is None and run.llm_lease_until is None  # given back


def test_a_review_that_ends_between_the_read_and_the_claim_is_not_made_again(
    deps: TurnDeps, monkeypatch
) -> None:
    """The other chain's review is stored (and its lease released) after this chain read the
    turn but before it claims the lease: the claim succeeds, and the stored review is used."""
    from nekoflow.turns.stages.common import save_result

    # the module (the package's ``review`` attribute is the stage function)
    review_stage = importlib.import_module("nekoflow.turns.stages.review")

    reviews: list[int] = []
    with FakeLLM(_script(0.0, reviews)) as llm:
        turn_id = _reviewing(deps, llm)
        theirs = ReviewOutput(source="llm", skipped=True, fallback_reason="their review")
        real_claim = review_stage.claim_review_call_in

        def other_chain_ends_then_claim(conn, tid, **kwargs):  # type: ignore[no-untyped-def]
            save_result(deps, tid, "review", theirs)
            return real_claim(conn, tid, **kwargs)

        monkeypatch.setattr(review_stage, "claim_review_call_in", other_chain_ends_then_claim)
        got = STAGE_FUNCS["review"](deps, turn_id)
    assert reviews == []  # the model was not asked
    assert got == theirs
    with Session(deps.engine) as s:
        run = s.get(TurnRun, turn_id)
        assert run.llm_lease_owner is None  # the claim was undone


def test_a_failing_review_call_gives_the_lease_back(deps: TurnDeps, monkeypatch) -> None:
    """Whatever ends the call (here an error out of the pipeline), the lease is released so
    the retried stage can claim it at once."""
    reviews: list[int] = []
    with FakeLLM(_script(0.0, reviews)) as llm:
        turn_id = _reviewing(deps, llm)

        def broken(inp: Any) -> ReviewOutput:
            raise RuntimeError("pipeline bug")

        monkeypatch.setattr(deps.review, "run", broken)
        outcome = execute_stage(deps, "review", turn_id)
        assert outcome.kind == "retry"
        with Session(deps.engine) as s:
            assert s.get(TurnRun, turn_id).llm_lease_owner is None
        monkeypatch.undo()
        assert execute_stage(deps, "review", turn_id, attempt=2).kind == "ok"
    assert len(reviews) == 1
