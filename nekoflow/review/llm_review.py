"""LLM review: ask a chat model for a JSON ReviewOutput, validate it and clamp it into range.

Any failure (the call, the JSON, the validation) raises :class:`LLMReviewError` with the reason;
:class:`nekoflow.review.pipeline.ReviewPipeline` then falls back to the rule review.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import re
from typing import Any

from pydantic import ValidationError

from nekoflow.debuglog import debug_detail
from nekoflow.errors import NekoflowError
from nekoflow.llm.base import ChatModel
from nekoflow.redact import safe_error
from nekoflow.review.models import (
    RELATIONSHIP_DIMENSIONS,
    FactItem,
    ReviewInput,
    ReviewOutput,
    ReviewScore,
)

MAX_ABS_DELTA = 5
"""A single turn may move a relationship dimension by at most this much either way."""

SYSTEM_PROMPT = """你是角色扮演对话的审查器。阅读一轮对话,只输出一个 JSON 对象,
不要输出其他任何文字。
JSON 结构:
{
  "should_write_memory": bool,
  "memory_items": [{"target": "user|character|world",
                    "mem_type": "short|long|relationship|event",
                    "title": str, "content": str, "importance": 0-1,
                    "ttl": "short|long|permanent",
                    "op": "ADD|UPDATE|DELETE|NOOP", "memory_id": int | null}],
  "relationship_delta": {"affection": int, "trust": int, "familiarity": int, "dependency": int,
                         "security": int, "jealousy": int, "reason": str},
  "plot_update": null | {"should_create_node": bool,
                         "level": "normal|important|turning_point|ending",
                         "title": str, "summary": str},
  "world_book_update": null | {"should_update": bool, "reason": str, "entry_title": str,
                               "entry_content": str},
  "scores": {"character_fidelity": 0-1, "immersion": 0-1, "relationship_progress": 0-1,
             "story_progress": 0-1, "memory_value": 0-1, "world_consistency": 0-1,
             "user_engagement": 0-1, "risk": 0-1},
  "skipped": bool,
  "facts": [{"slot": str, "value": str, "sentence": str, "change": bool}]
}
facts 是用户在 user_message 里陈述的关于自己的事实(没有就给 [])。slot 用这些名字:
user.name、user.nickname、user.age、user.birthday、user.home_city、user.hometown、user.job、
user.workplace、user.schedule、user.school、user.pet.<cat|dog|rabbit|…>.name、
user.family.<mother|father|sister|brother|…>.name、user.likes、user.dislikes、user.allergy、
user.favourite.<类别>、user.plan.<事件>(value 为时间)、user.event.<事件>(value 为时间)、
user.vet 等。value 只写值本身("叫我小满就好" 的 value 是 "小满");sentence 是原句;
取代了以前的值(搬家、换了、不再…)时 change 为 true。提问不是陈述("你还记得我叫什么吗"
没有事实),别人的事实、角色说的话也不算。
关系增量为本轮的变化量,每个维度在 -5 到 5 之间。普通闲聊 skipped 为 true。
existing_memories 是已有的记忆(id、title、content)。每条 memory_items 与它们对照:
重述了某条已有记忆(内容有补充或更新)时 op 为 UPDATE,memory_id 为那条记忆的 id;
与某条已有记忆矛盾(新事实取代旧事实)时 op 为 DELETE,memory_id 为被取代记忆的 id;
已有记忆已经完全包含时 op 为 NOOP,memory_id 为那条记忆的 id;全新的信息 op 为 ADD。"""


class LLMReviewError(NekoflowError):
    """The LLM review could not produce a valid output; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def build_messages(inp: ReviewInput) -> list[dict[str, str]]:
    """The chat messages asking the model to review ``inp``."""
    turn = {
        "user_message": inp.user_message,
        "assistant_message": inp.assistant_message,
        "selected_choice": inp.selected_choice,
        "relationship_state": inp.relationship_state,
        "character_state": inp.character_state,
        "real_time_context": inp.real_time_context,
        "active_plot_node": inp.active_plot_node,
        "recent_messages": inp.recent_messages[-6:],
        "existing_memories": [
            {k: m.get(k) for k in ("id", "title", "content")} for m in inp.memories
        ],
    }
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": json.dumps(turn, ensure_ascii=False, default=str)},
    ]


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def extract_json(text: str) -> dict[str, Any]:
    """The JSON object in a model reply (tolerates code fences and prose around it)."""
    body = _FENCE.sub("", text.strip())
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        start, end = body.find("{"), body.rfind("}")
        if start < 0 or end <= start:
            raise LLMReviewError("reply contains no JSON object") from None
        try:
            data = json.loads(body[start : end + 1])
        except json.JSONDecodeError as exc:
            raise LLMReviewError(f"reply is not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise LLMReviewError(f"reply JSON is a {type(data).__name__}, not an object")
    return data


def _num(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise LLMReviewError(f"{field}: not a number ({type(value).__name__})")
    try:
        num = float(value)
    except ValueError:
        raise LLMReviewError(f"{field}: not a number ({type(value).__name__})") from None
    if math.isnan(num) or math.isinf(num):
        raise LLMReviewError(f"{field}: not a finite number")
    return num


def _clamp01(value: Any, field: str) -> float:
    return min(1.0, max(0.0, _num(value, field)))


def clamp_output(data: dict[str, Any]) -> dict[str, Any]:
    """Clamp scores/importance to 0–1 and deltas to ±MAX_ABS_DELTA; drop unknown top-level keys."""
    out: dict[str, Any] = {k: data[k] for k in ReviewOutput.model_fields if k in data}
    out.pop("source", None)
    out.pop("fallback_reason", None)
    scores = out.get("scores")
    if isinstance(scores, dict):
        out["scores"] = {
            k: _clamp01(v, f"scores.{k}")
            for k, v in scores.items()
            if k in ReviewScore.model_fields and v is not None
        }
    delta = out.get("relationship_delta")
    if isinstance(delta, dict):
        fixed = dict(delta)
        for dim in RELATIONSHIP_DIMENSIONS:
            if fixed.get(dim) is not None:
                raw = round(_num(fixed[dim], f"relationship_delta.{dim}"))
                fixed[dim] = max(-MAX_ABS_DELTA, min(MAX_ABS_DELTA, int(raw)))
        fixed["source"] = "review_pipeline:llm"
        fixed.setdefault("reason", "")
        fixed = {k: v for k, v in fixed.items() if v is not None or k in ("plot_node_id",)}
        out["relationship_delta"] = fixed
    if "facts" in out:
        out["facts"] = _valid_facts(out["facts"])
    items = out.get("memory_items")
    if isinstance(items, list):
        fixed_items = []
        for i, item in enumerate(items):
            if isinstance(item, dict) and item.get("importance") is not None:
                item = {**item, "importance": _clamp01(item["importance"], f"memory_items.{i}")}
            if isinstance(item, dict):
                item = _memory_op(item)
            fixed_items.append(item)
        out["memory_items"] = fixed_items
    return out


_OPS = ("ADD", "UPDATE", "DELETE", "NOOP")
MAX_FACTS = 20
"""At most this many facts of one turn are kept from a model's answer."""


def _valid_facts(facts: Any) -> list[dict[str, Any]]:
    """The model's facts that validate (a slot ``user.…``, a value); the others are dropped, so
    one malformed fact costs only itself, not the whole review."""
    if not isinstance(facts, list):
        return []
    kept: list[dict[str, Any]] = []
    for fact in facts[:MAX_FACTS]:
        try:
            kept.append(FactItem.model_validate(fact).model_dump())
        except ValidationError:
            continue
    return kept


def _memory_op(item: dict[str, Any]) -> dict[str, Any]:
    """A memory item's ``op``/``memory_id`` made valid, or dropped (then the rules decide):
    an unknown op, or an UPDATE/DELETE/NOOP without an integer memory id."""
    out = dict(item)
    op = out.pop("op", None)
    mid = out.pop("memory_id", None)
    op = op.strip().upper() if isinstance(op, str) else None
    if isinstance(mid, str) and mid.strip().isdigit():
        mid = int(mid.strip())
    if not isinstance(mid, int) or isinstance(mid, bool):
        mid = None
    if op == "ADD":
        out["op"] = "ADD"
    elif op in _OPS and mid is not None:
        out["op"], out["memory_id"] = op, mid
    return out


def fill_from_rules(data: dict[str, Any], rule: ReviewOutput) -> dict[str, Any]:
    """Complete a (clamped) LLM answer with the rule review's numbers where the model was silent.

    Choice written down here (SPEC only says "validate, clamp, fall back on failure"): a model that
    answers valid JSON but leaves parts out has not failed, yet downstream stages need a delta
    (SPEC: "a delta is always produced") and eight scores. So a missing or null
    ``relationship_delta`` is the rule review's; each score the model did not give is the rule
    review's (the four quality scores then come from the AutoState cache, as in rule mode); and
    when ``should_write_memory`` is absent it is inferred from whether ``memory_items`` is
    non-empty. Everything the model did say wins; ``facts`` are the model's alone (none when it
    gives none).
    """
    out = dict(data)
    if out.get("relationship_delta") is None and rule.relationship_delta is not None:
        out["relationship_delta"] = rule.relationship_delta.model_dump()
    if rule.scores is not None:
        given = out.get("scores")
        if given is None:
            out["scores"] = rule.scores.model_dump()
        elif isinstance(given, dict):
            out["scores"] = {**rule.scores.model_dump(), **given}
    if "should_write_memory" not in out and isinstance(out.get("memory_items"), list):
        out["should_write_memory"] = bool(out["memory_items"])
    return out


def parse_review(text: str, rule: ReviewOutput | None = None) -> ReviewOutput:
    """Turn a model reply into a validated, clamped :class:`ReviewOutput` (source "llm").

    With ``rule`` (the rule review of the same turn), parts the model left out are filled from it
    (see :func:`fill_from_rules`).
    """
    data = clamp_output(extract_json(text))
    if rule is not None:
        data = fill_from_rules(data, rule)
    try:
        output = ReviewOutput.model_validate({**data, "source": "llm"})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise LLMReviewError(f"invalid review JSON at {where}: {first['msg']}") from None
    # Keep the flag and the items consistent: no items → nothing to write, and vice versa.
    if not output.should_write_memory:
        output.memory_items = []
    elif not output.memory_items:
        output.should_write_memory = False
    return output


def is_chat_model_like(llm: object) -> bool:
    """Can :func:`run_llm_review` talk to ``llm``? (``complete``, ``chat`` or a plain callable)."""
    return (
        callable(getattr(llm, "complete", None))
        or callable(getattr(llm, "chat", None))
        or callable(llm)
    )


def _call(llm: Any, messages: list[dict[str, str]]) -> Any:
    """Call a ChatModel (``complete``), a seed-style ``chat(messages)`` client or a callable."""
    complete = getattr(llm, "complete", None)
    if callable(complete):
        result = complete(messages, temperature=0.0, json_mode=True)
    elif callable(getattr(llm, "chat", None)):
        result = llm.chat(messages)
    elif callable(llm):
        result = llm(messages)
    else:
        raise LLMReviewError(f"llm: {type(llm).__name__} has no complete() or chat() method")
    if inspect.isawaitable(result):  # the seed's ``await llm.chat(prompt)``
        result = _await(result)
    return result


def _await(awaitable: Any) -> Any:
    async def wait() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()  # a coroutine that will never run: close it rather than leak a warning
    raise LLMReviewError("llm returned an awaitable inside a running event loop")


def _reply_text(result: Any) -> str | dict[str, Any]:
    """The reply text (or an already-parsed JSON object) from whatever the model returned."""
    if isinstance(result, str | dict):
        return result
    for attr in ("text", "content"):
        value = getattr(result, attr, None)
        if isinstance(value, str):
            return value
    raise LLMReviewError(f"LLM returned {type(result).__name__}, not text")


def run_llm_review(
    inp: ReviewInput, llm: ChatModel | Any, rule: ReviewOutput | None = None
) -> ReviewOutput:
    """Ask ``llm`` to review ``inp``; raise :class:`LLMReviewError` with the reason on failure.

    ``llm`` is a :class:`ChatModel`; an object with ``chat(messages)`` (sync or async) or a plain
    callable taking the messages works too. It may return a ChatResult, text or a parsed dict.
    ``rule`` (the rule review of the same turn) fills what the model left out.
    """
    try:
        reply = _reply_text(_call(llm, build_messages(inp)))
    except LLMReviewError:
        raise
    except Exception as exc:  # LLMError and anything a duck-typed client raises
        # Never the error's message: it may quote the turn (an LLM gateway echoing the input).
        debug_detail("LLM review call failed", exc)
        raise LLMReviewError(f"LLM call failed: {safe_error(exc)}") from None
    if isinstance(reply, dict):
        return parse_review(json.dumps(reply, ensure_ascii=False, default=str), rule)
    return parse_review(reply, rule)
