"""The runtime dispatcher: is the character runtime on, does this message trigger it, which
memory scope and scope id, which character — all pure decisions over a parsed request.

Triggers (seed): ``always``; ``private_only``; ``mention_only``; ``mention_or_private``;
``private_or_reply``; ``mention_or_reply`` (private, @mention or a reply to the bot: what a
group bot answers; Telegram's default); ``keyword`` (a case-sensitive substring of the channel's
``trigger_keywords`` in the content); ``manual`` (``character_mode`` true); anything else is
false. Private means scene ``private`` or ``web_session``. A flag (is_mentioned,
is_reply_to_bot, character_mode) is the first boolean-like value among the request's attribute,
its metadata and the context's metadata: bools, 0/1 and "true"/"false"-like strings count, other
values (None, a test double's auto-attribute) defer to the next source; none → false.
An unconfigured channel uses its built-in default trigger (``config.CHANNEL_DEFAULTS``), and a
channel without one ``mention_or_private``.
"""

from __future__ import annotations

from collections.abc import Mapping
from configparser import ConfigParser
from enum import StrEnum
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel, ConfigDict

from nekoflow.channels.config import (
    CHANNEL_DEFAULTS,
    FALLBACK_MEMORY_SCOPE,
    FALLBACK_TRIGGER,
    RuntimeConfig,
    load_runtime_config,
)
from nekoflow.channels.context import (
    ChannelRuntimeContext,
    MemoryScope,
    TriggerStrategy,
    as_runtime_context,
    context_from_request,
    request_field,
)
from nekoflow.errors import ConfigError, InputError

_UNSET: Any = object()


def _is_config(value: Any) -> bool:
    return value is None or isinstance(
        value, RuntimeConfig | Mapping | ConfigParser | str | PurePath
    )


def _as_runtime_config(config: Any) -> RuntimeConfig:
    if config is None:
        return RuntimeConfig()
    if isinstance(config, RuntimeConfig):
        return config
    if isinstance(config, ConfigParser):
        return RuntimeConfig.from_parser(config)
    if isinstance(config, str | PurePath):
        return load_runtime_config(config)
    if isinstance(config, Mapping):
        return RuntimeConfig.from_mapping(config)
    raise ConfigError(
        f"runtime config must be a mapping, RuntimeConfig, ConfigParser or path, "
        f"got {type(config).__name__}",
        field="config",
    )


def _as_flag(value: Any) -> bool | None:
    """A trigger flag's truth: bools as they are, 0/1, "true"/"false"-like strings; anything
    else (None, a stray object) is "not given" so the next source is consulted."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE_WORDS:
            return True
        if text in _FALSE_WORDS:
            return False
    return None


_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
_FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


def _part(value: Any, fallback: str) -> str:
    text = "" if value is None else str(value).strip()
    return text or fallback


def build_scope_id(context: ChannelRuntimeContext, memory_scope: str | None) -> str:
    """The isolation key of a memory scope (SPEC "Channels"), e.g. ``qq:group:1:user:2``.

    Empty channel → ``unknown``, empty user → ``anonymous``, empty conversation →
    ``unknown_conversation``; group/group_user without a group id and thread without a thread id
    use the conversation id; an unknown (or empty) scope is ``conversation``.
    """
    context = as_runtime_context(context)
    channel = _part(context.channel, "unknown")
    conversation = _part(context.conversation_id, "unknown_conversation")
    user = _part(context.user_id, "anonymous")
    group = _part(context.group_id, conversation)
    thread = _part(context.thread_id, conversation)
    scope = _part(memory_scope, "").lower()
    if scope == MemoryScope.user:
        return f"{channel}:user:{user}"
    if scope == MemoryScope.group:
        return f"{channel}:group:{group}"
    if scope == MemoryScope.group_user:
        return f"{channel}:group:{group}:user:{user}"
    if scope == MemoryScope.chat_user:
        return f"{channel}:chat:{conversation}:user:{user}"
    if scope == MemoryScope.thread:
        return f"{channel}:chat:{conversation}:thread:{thread}"
    return f"{channel}:conversation:{conversation}"


class SkipReason(StrEnum):
    """Why a message does not enter the character runtime."""

    disabled = "disabled"
    not_triggered = "not_triggered"


class DispatchDecision(BaseModel):
    """The dispatcher's verdict on one request; ``reason`` says why when not ``accepted``."""

    model_config = ConfigDict(frozen=True)

    accepted: bool
    reason: SkipReason | None = None
    channel: str
    trigger: str
    memory_scope: str
    scope_id: str
    character_id: str | None = None
    context: ChannelRuntimeContext


class CharacterRuntimeContextDispatcher:
    """Decides, per message, whether and how the character runtime handles it (seed names).

    ``config`` is what :func:`load_runtime_config` returns, SPEC's plain mapping, a
    ConfigParser, a path to a config.ini, or None (seed defaults: enabled everywhere, built-in
    per-channel triggers). Accepted call shapes: ``Dispatcher(config)`` (SPEC),
    ``Dispatcher(runtime=..., config=...)`` and ``Dispatcher(runtime, config)`` (the seed's
    order). A single positional argument that is not a configuration is the seed's ``runtime``.
    ``runtime`` is kept as ``self.runtime`` for callers that hang the character runtime on the
    dispatcher; no decision here uses it. Contexts may be :class:`ChannelRuntimeContext` or any
    dict/object with its field names.
    """

    def __init__(self, *args: Any, config: Any = _UNSET, runtime: Any = _UNSET) -> None:
        if len(args) > 2:
            raise TypeError(
                "CharacterRuntimeContextDispatcher takes at most 2 positional arguments "
                f"(runtime, config), got {len(args)}"
            )
        positional_config: Any = _UNSET
        positional_runtime: Any = _UNSET
        if len(args) == 2:
            positional_runtime, positional_config = args
        elif len(args) == 1:
            if _is_config(args[0]):
                positional_config = args[0]
            else:
                positional_runtime = args[0]
        if positional_config is not _UNSET and config is not _UNSET:
            raise TypeError("CharacterRuntimeContextDispatcher got config twice")
        if positional_runtime is not _UNSET and runtime is not _UNSET:
            raise TypeError("CharacterRuntimeContextDispatcher got runtime twice")
        if config is _UNSET:
            config = None if positional_config is _UNSET else positional_config
        if runtime is _UNSET:
            runtime = None if positional_runtime is _UNSET else positional_runtime
        self.runtime = runtime
        self._adapters: dict[str, Any] = {}
        self.config = _as_runtime_config(config)

    # --- adapters (the seed's registry) ------------------------------------------------

    def register_adapter(self, adapter: Any) -> None:
        """Remember ``adapter`` under its ``channel_name``; ``dispatch`` uses it by channel."""
        name = getattr(adapter, "channel_name", None)
        if not isinstance(name, str) or not name.strip():
            raise InputError("an adapter needs a non-empty channel_name", field="channel_name")
        self._adapters[name.strip().lower()] = adapter

    def get_adapter(self, channel: str) -> Any:
        """The adapter registered for ``channel``, or None."""
        if not isinstance(channel, str):
            return None
        return self._adapters.get(channel.strip().lower())

    # --- configuration lookups ---------------------------------------------------------

    def is_enabled(self, ctx: ChannelRuntimeContext) -> bool:
        """The channel's ``enabled`` when set, else the global ``default_enabled``."""
        ctx = as_runtime_context(ctx)
        enabled = self.config.channel(_part(ctx.channel, "unknown")).enabled
        if enabled is not None:
            return enabled
        return self.config.character_runtime.default_enabled

    def get_trigger(self, ctx: ChannelRuntimeContext) -> str:
        """The channel's configured trigger, else its built-in default, else the fallback."""
        ctx = as_runtime_context(ctx)
        channel = _part(ctx.channel, "unknown")
        configured = self.config.channel(channel).trigger
        if configured is not None:
            return configured.value
        defaults = CHANNEL_DEFAULTS.get(channel.lower())
        return (defaults.trigger if defaults else FALLBACK_TRIGGER).value

    def resolve_memory_scope(self, ctx: ChannelRuntimeContext, adapter: Any = None) -> str:
        """Configured scope, else the adapter's, else the channel default; private chats turn
        group and group_user into user."""
        ctx = as_runtime_context(ctx)
        channel = _part(ctx.channel, "unknown")
        scope: str | None = None
        configured = self.config.channel(channel).memory_scope
        if configured is not None:
            scope = configured.value
        elif adapter is not None and callable(getattr(adapter, "resolve_memory_scope", None)):
            scope = adapter.resolve_memory_scope(ctx) or None
        if scope is None:
            defaults = CHANNEL_DEFAULTS.get(channel.lower())
            scope = (defaults.memory_scope if defaults else FALLBACK_MEMORY_SCOPE).value
        scope = str(scope).strip().lower()
        if ctx.is_private and scope in (MemoryScope.group, MemoryScope.group_user):
            return MemoryScope.user.value
        return scope

    def build_scope_id(self, ctx: ChannelRuntimeContext, memory_scope: str | None) -> str:
        """See :func:`build_scope_id`."""
        return build_scope_id(ctx, memory_scope)

    def select_character_id(self, ctx: ChannelRuntimeContext, adapter: Any = None) -> str | None:
        """The adapter's choice, else the channel's ``default_character_id``, else the global
        ``default_character_id`` (None: the currently active character)."""
        ctx = as_runtime_context(ctx)
        if adapter is not None and callable(getattr(adapter, "select_character_id", None)):
            chosen = adapter.select_character_id(ctx)
            if chosen not in (None, ""):
                return str(chosen)
        return self.get_default_character_id(ctx) or None

    # --- the seed dispatcher's other getters -----------------------------------------------

    def get_trigger_strategy(self, ctx: ChannelRuntimeContext) -> str:
        """The seed's name for :meth:`get_trigger`."""
        return self.get_trigger(ctx)

    def get_memory_scope(self, ctx: ChannelRuntimeContext) -> str:
        """The channel's configured memory scope, else its built-in default (no adapter and no
        private-chat fallback: that is :meth:`resolve_memory_scope`)."""
        ctx = as_runtime_context(ctx)
        channel = _part(ctx.channel, "unknown")
        configured = self.config.channel(channel).memory_scope
        if configured is not None:
            return configured.value
        defaults = CHANNEL_DEFAULTS.get(channel.lower())
        return (defaults.memory_scope if defaults else FALLBACK_MEMORY_SCOPE).value

    def get_default_character_id(self, ctx: ChannelRuntimeContext) -> str:
        """The channel's ``default_character_id``, else the global one; "" when neither is set
        (the seed's "use the currently active character")."""
        ctx = as_runtime_context(ctx)
        channel_default = self.config.channel(_part(ctx.channel, "unknown")).default_character_id
        return channel_default or self.config.character_runtime.default_character_id or ""

    def get_legacy_prompt_enabled(self, ctx: ChannelRuntimeContext) -> bool:
        """The channel's ``legacy_prompt_enabled`` (false when not configured)."""
        ctx = as_runtime_context(ctx)
        return self.config.channel(_part(ctx.channel, "unknown")).legacy_prompt_enabled

    # --- triggers ------------------------------------------------------------------------

    @staticmethod
    def _get_meta_field(chat_request: Any, key: str, default: Any = None) -> Any:
        """``chat_request.<key>`` (or ``[key]`` for a dict) when not None, else
        ``chat_request.metadata[key]``, else ``default``."""
        return request_field(chat_request, key, default)

    def _flag(self, chat_request: Any, ctx: ChannelRuntimeContext, key: str) -> bool:
        """A trigger flag: the request's attribute, else its metadata, else the context's
        metadata — the first that holds a boolean-like value (see :func:`_as_flag`)."""
        if isinstance(chat_request, Mapping):
            direct = chat_request.get(key)
            metadata = chat_request.get("metadata")
        else:
            direct = getattr(chat_request, key, None)
            metadata = getattr(chat_request, "metadata", None)
        sources = [direct]
        if isinstance(metadata, Mapping):
            sources.append(metadata.get(key))
        sources.append(ctx.metadata.get(key))
        for value in sources:
            flag = _as_flag(value)
            if flag is not None:
                return flag
        return False

    def _should_trigger(self, trigger: str, ctx: ChannelRuntimeContext, chat_request: Any) -> bool:
        """Whether ``trigger`` lets this message in (see the module docstring)."""
        ctx = as_runtime_context(ctx)
        private = ctx.is_private
        if trigger == TriggerStrategy.always:
            return True
        if trigger == TriggerStrategy.private_only:
            return private
        if trigger == TriggerStrategy.mention_only:
            return self._flag(chat_request, ctx, "is_mentioned")
        if trigger == TriggerStrategy.mention_or_private:
            return private or self._flag(chat_request, ctx, "is_mentioned")
        if trigger == TriggerStrategy.private_or_reply:
            return private or self._flag(chat_request, ctx, "is_reply_to_bot")
        if trigger == TriggerStrategy.mention_or_reply:
            return (
                private
                or self._flag(chat_request, ctx, "is_mentioned")
                or self._flag(chat_request, ctx, "is_reply_to_bot")
            )
        if trigger == TriggerStrategy.keyword:
            content = self._get_meta_field(chat_request, "content", "")
            if not isinstance(content, str) or not content:
                return False
            keywords = self.config.channel(_part(ctx.channel, "unknown")).trigger_keywords
            return any(keyword and keyword in content for keyword in keywords)
        if trigger == TriggerStrategy.manual:
            return self._flag(chat_request, ctx, "character_mode")
        return False

    # --- the whole decision ----------------------------------------------------------------

    def dispatch(self, chat_request: Any, adapter: Any = None) -> DispatchDecision:
        """Decide for one parsed request: enabled? triggered? scope, scope id and character.

        The context comes from ``adapter.build_runtime_context``; without ``adapter`` the one
        registered for the request's channel (:meth:`register_adapter`) is used, else the
        request itself. Skipped requests still carry the scope they would have used.
        """
        if chat_request is None:
            raise InputError("dispatch needs a chat request, got None", field="chat_request")
        if adapter is None and self._adapters:
            adapter = self.get_adapter(request_field(chat_request, "channel", ""))
        if adapter is not None:
            ctx = adapter.build_runtime_context(chat_request)
        else:
            ctx = context_from_request(chat_request)
        trigger = self.get_trigger(ctx)
        memory_scope = self.resolve_memory_scope(ctx, adapter)
        reason: SkipReason | None = None
        if not self.is_enabled(ctx):
            reason = SkipReason.disabled
        elif not self._should_trigger(trigger, ctx, chat_request):
            reason = SkipReason.not_triggered
        return DispatchDecision(
            accepted=reason is None,
            reason=reason,
            channel=_part(ctx.channel, "unknown"),
            trigger=trigger,
            memory_scope=memory_scope,
            scope_id=build_scope_id(ctx, memory_scope),
            character_id=self.select_character_id(ctx, adapter),
            context=ctx,
        )
