"""ReviewPipeline: run the rule or LLM review on a turn and emit the five review events.

Events, in order: review.started, review.memory.scored, review.relationship.scored,
review.plot.scored, review.finished. LLM mode falls back to the rule review on any failure and
records why in ``ReviewOutput.fallback_reason``; its quality scores feed the AutoState cache.
A valid LLM answer that leaves out the delta or some scores is completed from the rule review of
the same turn (see :func:`nekoflow.review.llm_review.fill_from_rules`).
Observers never break a review: a bus or AutoState store that raises is logged and ignored. A bus
whose ``emit`` is a coroutine function is awaited (or scheduled on the running event loop).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import Any, Literal

from nekoflow.errors import ConfigError
from nekoflow.events import Event, EventBus, NullEventBus
from nekoflow.llm.base import ChatModel
from nekoflow.redact import safe_error
from nekoflow.review.autostate import AutoStateCache, process_autostate
from nekoflow.review.llm_review import LLMReviewError, is_chat_model_like, run_llm_review
from nekoflow.review.models import ReviewInput, ReviewOutput
from nekoflow.review.rules import ReviewKeywords, run_rule_review, total_delta

log = logging.getLogger(__name__)

EVENT_SOURCE = "review_pipeline"
REVIEW_EVENTS: tuple[str, ...] = (
    "review.started",
    "review.memory.scored",
    "review.relationship.scored",
    "review.plot.scored",
    "review.finished",
)


_pending_emits: set[asyncio.Task[Any]] = set()


def _deliver_async(awaitable: Any) -> None:
    """Run an async bus's ``emit`` coroutine: to completion when no event loop is running here,
    else as a task on the running loop (kept referenced until done), in emission order."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(_await(awaitable))
        return
    task = loop.create_task(_await(awaitable))
    _pending_emits.add(task)
    task.add_done_callback(_emit_done)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _emit_done(task: asyncio.Task[Any]) -> None:
    _pending_emits.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("async event bus failed", exc_info=task.exception())


class ReviewPipeline:
    """Reviews turns in ``"rule"`` or ``"llm"`` mode and reports progress on an event bus."""

    def __init__(
        self,
        mode: Literal["rule", "llm"] = "rule",
        event_bus: EventBus | None = None,
        llm: ChatModel | None = None,
        *,
        autostate: AutoStateCache | None = None,
        keywords: ReviewKeywords | None = None,
        llm_factory: Callable[[], ChatModel] | None = None,
    ) -> None:
        if mode not in ("rule", "llm"):
            raise ConfigError(f"mode: must be 'rule' or 'llm', got {mode!r}", field="mode")
        if event_bus is not None and not callable(getattr(event_bus, "emit", None)):
            raise ConfigError("event_bus: needs an emit(event) method", field="event_bus")
        if llm is not None and not is_chat_model_like(llm):
            raise ConfigError(
                "llm: needs a complete(messages, ...) or chat(messages) method, or to be callable",
                field="llm",
            )
        self.mode = mode
        # ``is not None``: a bus that happens to be falsy (empty, __len__ 0) is still a bus.
        self.event_bus: EventBus = event_bus if event_bus is not None else NullEventBus()
        self._llm = llm
        self._llm_factory = llm_factory
        self.autostate: AutoStateCache = autostate if autostate is not None else process_autostate()
        self.keywords = keywords

    @property
    def llm(self) -> ChatModel:
        """The chat model used in LLM mode (``llm_factory`` builds it on first use when not
        given; :func:`~nekoflow.review.wiring.get_review_pipeline` passes the configured one)."""
        if self._llm is None:
            if self._llm_factory is None:
                raise ConfigError(
                    "llm: LLM review needs a chat model (pass llm= or llm_factory=)", field="llm"
                )
            self._llm = self._llm_factory()
        return self._llm

    def _event(self, inp: ReviewInput, event_type: str, payload: dict[str, Any]) -> Event:
        """One review event about ``inp``."""
        return Event(
            type=event_type,
            source=EVENT_SOURCE,
            conversation_id=inp.conversation_id or None,
            character_id=inp.character_id or None,
            user_id=inp.user_id or None,
            group_id=inp.group_id or None,
            payload=payload,
        )

    def _send(self, events: list[Event]) -> None:
        """Emit ``events`` in order — in one round trip when the bus can (``emit_many``); a
        failing bus is logged, never raised into the review."""
        many = getattr(self.event_bus, "emit_many", None)
        if many is not None and len(events) > 1:
            try:
                many(events)
            except Exception:
                log.exception(
                    "event bus %r failed on %d review events", self.event_bus, len(events)
                )
            return
        for event in events:
            try:
                result = self.event_bus.emit(event)
                if inspect.isawaitable(result):
                    _deliver_async(result)
            except Exception:
                log.exception("event bus %r failed on %s", self.event_bus, event.type)

    def _review(self, inp: ReviewInput) -> ReviewOutput:
        if self.mode == "rule":
            return run_rule_review(inp, keywords=self.keywords, autostate=self.autostate)
        # The rule review answers when the LLM fails, and fills what a valid LLM answer left out.
        rule = run_rule_review(inp, keywords=self.keywords, autostate=self.autostate)
        try:
            output = run_llm_review(inp, self.llm, rule)
        except Exception as exc:  # any failure (model setup, call, parsing) → rule review
            reason = (
                exc.reason
                if isinstance(exc, LLMReviewError)
                else f"LLM review failed: {safe_error(exc)}"
            )
            log.warning("LLM review fell back to rules: %s", reason)
            rule.fallback_reason = reason
            return rule
        if output.scores is not None:
            try:
                self.autostate.set(
                    inp.character_id, inp.user_id, inp.conversation_id, output.scores.model_dump()
                )
            except Exception:
                log.exception("could not store AutoState quality scores")
        return output

    def run(self, inp: ReviewInput | dict[str, Any]) -> ReviewOutput:
        """Review one turn; ``inp`` may be a ReviewInput or a dict of its fields."""
        if not isinstance(inp, ReviewInput):
            inp = ReviewInput.model_validate(inp)
        started = self._event(
            inp,
            "review.started",
            {
                "conversation_id": inp.conversation_id,
                "character_id": inp.character_id,
                "user_id": inp.user_id,
                "mode": self.mode,
            },
        )
        # A model's review takes seconds: say now that it started. The rules take microseconds:
        # all five events go together after them (one round trip on a Redis bus).
        pending = [started]
        if self.mode == "llm":
            self._send(pending)
            pending = []
        output = self._review(inp)
        scores = output.scores
        delta = output.relationship_delta
        pending.append(
            self._event(
                inp,
                "review.memory.scored",
                {
                    "memory_value": scores.memory_value if scores else None,
                    "should_write_memory": output.should_write_memory,
                    "memory_items": [m.model_dump() for m in output.memory_items],
                },
            )
        )
        pending.append(
            self._event(
                inp,
                "review.relationship.scored",
                {
                    "delta": delta.model_dump() if delta else None,
                    "total_delta": total_delta(delta) if delta else 0,
                    "relationship_progress": scores.relationship_progress if scores else None,
                },
            )
        )
        pending.append(
            self._event(
                inp,
                "review.plot.scored",
                {
                    "story_progress": scores.story_progress if scores else None,
                    "plot_update": output.plot_update.model_dump() if output.plot_update else None,
                    "world_book_update": (
                        output.world_book_update.model_dump() if output.world_book_update else None
                    ),
                },
            )
        )
        pending.append(
            self._event(
                inp,
                "review.finished",
                {
                    "source": output.source,
                    "skipped": output.skipped,
                    "should_write_memory": output.should_write_memory,
                    "memory_items": len(output.memory_items),
                    "total_delta": total_delta(delta) if delta else 0,
                    "plot_node": bool(output.plot_update and output.plot_update.should_create_node),
                    "world_book_update": bool(
                        output.world_book_update and output.world_book_update.should_update
                    ),
                    "scores": scores.model_dump() if scores else None,
                    "fallback_reason": output.fallback_reason,
                },
            )
        )
        self._send(pending)
        return output
