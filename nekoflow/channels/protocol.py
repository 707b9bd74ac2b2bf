"""The adapter protocol: what a channel implements to join the character runtime (seed).

The protocol is exactly the seed's: ``channel_name`` and five methods, so any object with them
(e.g. a test double) is a ``CharacterChannelAdapter``. The platform adapters in
``nekoflow.channels.adapters`` also provide ``parse_event(raw_event) -> ChatRequest | None``
(:class:`ChannelEventParser`).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from nekoflow.channels.context import ChannelRenderPolicy, ChannelRuntimeContext, ChatRequest


@runtime_checkable
class CharacterChannelAdapter(Protocol):
    """A channel's input/output adapter: ``channel_name`` and the seed's five methods."""

    channel_name: str

    def build_runtime_context(self, chat_request: Any) -> ChannelRuntimeContext:
        """Which channel/conversation/scene a request belongs to."""
        ...

    def get_render_policy(self, context: ChannelRuntimeContext) -> ChannelRenderPolicy:
        """What the channel can display."""
        ...

    def select_character_id(self, context: ChannelRuntimeContext) -> str | None:
        """The character for this context, or None for the configured default."""
        ...

    def resolve_memory_scope(self, context: ChannelRuntimeContext) -> str:
        """The adapter's memory scope (configuration overrides it)."""
        ...

    def render_result(self, result: Any, context: ChannelRuntimeContext) -> list[dict[str, Any]]:
        """Outgoing messages for a turn result's text (never the prompt)."""
        ...


@runtime_checkable
class ChannelEventParser(Protocol):
    """The input half of a platform adapter: raw platform events → chat requests."""

    channel_name: str

    def parse_event(self, raw_event: Any) -> ChatRequest | None:
        """A platform event → ChatRequest; None when it is not a chat message."""
        ...
