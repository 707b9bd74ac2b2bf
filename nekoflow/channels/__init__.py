"""Channels: platform adapters, the runtime dispatcher, config.ini and reply rendering.

Pure: imports neither Celery, Redis nor SQL. ``adapter.parse_event(raw)`` gives a
:class:`ChatRequest`; ``CharacterRuntimeContextDispatcher(config).dispatch(request, adapter)``
decides whether the character runtime answers and with which memory scope.
"""

from nekoflow.channels.adapters import (
    BaseChannelAdapter,
    FeishuChannelAdapter,
    QQBotChannelAdapter,
    QQChannelAdapter,
    TelegramChannelAdapter,
    WebChannelAdapter,
    get_adapter,
)
from nekoflow.channels.config import (
    CHANNEL_DEFAULTS,
    ChannelRuntimeSettings,
    GlobalRuntimeSettings,
    RuntimeConfig,
    default_runtime_config,
    load_runtime_config,
    parse_runtime_config,
)
from nekoflow.channels.context import (
    Attachment,
    ChannelRenderPolicy,
    ChannelRuntimeContext,
    ChatRequest,
    ChatSender,
    MemoryScope,
    TriggerStrategy,
)
from nekoflow.channels.dispatcher import (
    CharacterRuntimeContextDispatcher,
    DispatchDecision,
    SkipReason,
    build_scope_id,
)
from nekoflow.channels.errors import MalformedEventError
from nekoflow.channels.protocol import CharacterChannelAdapter
from nekoflow.channels.render import split_text, strip_markdown

__all__ = [
    "CHANNEL_DEFAULTS",
    "Attachment",
    "BaseChannelAdapter",
    "ChannelRenderPolicy",
    "ChannelRuntimeContext",
    "ChannelRuntimeSettings",
    "CharacterChannelAdapter",
    "CharacterRuntimeContextDispatcher",
    "ChatRequest",
    "ChatSender",
    "DispatchDecision",
    "FeishuChannelAdapter",
    "GlobalRuntimeSettings",
    "MalformedEventError",
    "MemoryScope",
    "QQBotChannelAdapter",
    "QQChannelAdapter",
    "RuntimeConfig",
    "SkipReason",
    "TelegramChannelAdapter",
    "TriggerStrategy",
    "WebChannelAdapter",
    "build_scope_id",
    "default_runtime_config",
    "get_adapter",
    "load_runtime_config",
    "parse_runtime_config",
    "split_text",
    "strip_markdown",
]
