"""Metering model calls: a ChatModel wrapper that reports each call's usage to the open meter.

Pure (no SQL): a stage opens :func:`metered` around work that may call the model (the LLM
review), the wrapped model appends what the server reported, and the stage stores the entries
with its result — so usage is counted in the same transaction as the work it paid for.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from nekoflow.llm.base import ChatModel, ChatResult, Message


@dataclass(frozen=True)
class UsageEntry:
    """One model call's reported usage."""

    model: str
    prompt_tokens: int
    completion_tokens: int
    #: the server reported no usage: the counts are an estimate
    estimated: bool = False


_meter: contextvars.ContextVar[list[UsageEntry] | None] = contextvars.ContextVar(
    "nekoflow_usage_meter", default=None
)


@contextmanager
def metered() -> Iterator[list[UsageEntry]]:
    """Collect the usage of every metered model call made inside the block."""
    entries: list[UsageEntry] = []
    token = _meter.set(entries)
    try:
        yield entries
    finally:
        _meter.reset(token)


def report(result: ChatResult, default_model: str = "") -> None:
    """Add a call's usage to the open meter (nothing when none is open)."""
    entries = _meter.get()
    if entries is None:
        return
    entries.append(
        UsageEntry(
            model=result.model or default_model,
            prompt_tokens=result.prompt_tokens or 0,
            completion_tokens=result.completion_tokens or 0,
            estimated=result.usage_estimated,
        )
    )


class MeteredChatModel:
    """Wraps a ChatModel so that each successful call reports its usage to the open meter."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", type(inner).__name__)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> ChatResult:
        """The inner model's reply; its usage goes to the open meter."""
        result = self.inner.complete(
            messages, temperature=temperature, max_tokens=max_tokens, json_mode=json_mode
        )
        report(result, self.name)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
