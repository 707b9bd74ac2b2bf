"""SPEC "Channels": scope ids, is_enabled, triggers, meta fields, memory scope, dispatch."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nekoflow.channels import (
    ChannelRuntimeContext,
    CharacterRuntimeContextDispatcher,
    ChatRequest,
    QQChannelAdapter,
    TelegramChannelAdapter,
    WebChannelAdapter,
    build_scope_id,
)
from nekoflow.channels.dispatcher import DispatchDecision, SkipReason
from nekoflow.errors import ConfigError, InputError


def ctx(**kw) -> ChannelRuntimeContext:
    base = {"channel": "qq", "conversation_id": "c1", "scene": "group"}
    base.update(kw)
    return ChannelRuntimeContext(**base)


# --- build_scope_id: the seed's 9 cases ------------------------------------------------------

FULL = {"user_id": "u1", "group_id": "g1", "thread_id": "t1"}


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        ("conversation", "qq:conversation:c1"),
        ("user", "qq:user:u1"),
        ("group", "qq:group:g1"),
        ("group_user", "qq:group:g1:user:u1"),
        ("chat_user", "qq:chat:c1:user:u1"),
        ("thread", "qq:chat:c1:thread:t1"),
    ],
)
def test_scope_id_six_scopes(scope: str, expected: str) -> None:
    assert build_scope_id(ctx(**FULL), scope) == expected


def test_scope_id_unknown_scope_is_conversation() -> None:
    assert build_scope_id(ctx(**FULL), "galaxy") == "qq:conversation:c1"
    assert build_scope_id(ctx(**FULL), "") == "qq:conversation:c1"
    assert build_scope_id(ctx(**FULL), None) == "qq:conversation:c1"


def test_scope_id_empty_user_is_anonymous() -> None:
    assert build_scope_id(ctx(group_id="g1"), "user") == "qq:user:anonymous"
    assert build_scope_id(ctx(group_id="g1"), "group_user") == "qq:group:g1:user:anonymous"
    assert build_scope_id(ctx(), "chat_user") == "qq:chat:c1:user:anonymous"


def test_scope_id_empty_group_uses_conversation() -> None:
    assert build_scope_id(ctx(user_id="u1"), "group") == "qq:group:c1"
    assert build_scope_id(ctx(user_id="u1"), "group_user") == "qq:group:c1:user:u1"


def test_scope_id_fallbacks_for_channel_conversation_thread() -> None:
    empty = ChannelRuntimeContext(channel="", conversation_id="", scene="group")
    assert build_scope_id(empty, "conversation") == "unknown:conversation:unknown_conversation"
    assert build_scope_id(empty, "group") == "unknown:group:unknown_conversation"
    assert build_scope_id(ctx(), "thread") == "qq:chat:c1:thread:c1"


def test_scope_id_method_equals_function_and_accepts_int_ids() -> None:
    context = ChannelRuntimeContext(
        channel="qq", conversation_id=789, scene="group", user_id=456, group_id=789
    )
    dispatcher = CharacterRuntimeContextDispatcher()
    assert dispatcher.build_scope_id(context, "group_user") == "qq:group:789:user:456"
    assert dispatcher.build_scope_id(context, "group_user") == build_scope_id(context, "group_user")


def test_context_accepts_seed_dataclass_arguments() -> None:
    positional = ChannelRuntimeContext("qq", "c1", "private", "u1")
    assert positional.user_id == "u1"
    assert positional.metadata == {}
    assert positional.group_id == positional.thread_id == positional.raw_event_id == ""
    with pytest.raises(TypeError):
        ChannelRuntimeContext("qq", "c1", "private", channel="web")


# --- is_enabled: the seed's 5 cases ----------------------------------------------------------


def dispatcher(channels: dict | None = None, **global_) -> CharacterRuntimeContextDispatcher:
    return CharacterRuntimeContextDispatcher(
        {
            "character_runtime": global_,
            "channels": {k: {"character_runtime": v} for k, v in (channels or {}).items()},
        }
    )


def test_enabled_channel_true_overrides_global_false() -> None:
    d = dispatcher({"qq": {"enabled": True}}, default_enabled=False)
    assert d.is_enabled(ctx()) is True


def test_enabled_channel_false_overrides_global_true() -> None:
    d = dispatcher({"qq": {"enabled": False}}, default_enabled=True)
    assert d.is_enabled(ctx()) is False
    assert d.is_enabled(ctx(channel="QQ")) is False  # channel names are case-insensitive


def test_enabled_unset_follows_global_true() -> None:
    d = dispatcher({"qq": {"trigger": "always"}}, default_enabled=True)
    assert d.is_enabled(ctx()) is True


def test_enabled_unset_follows_global_false() -> None:
    d = dispatcher({"qq": {"trigger": "always"}}, default_enabled=False)
    assert d.is_enabled(ctx()) is False


def test_enabled_unknown_channel_follows_global() -> None:
    assert dispatcher({"qq": {"enabled": False}}).is_enabled(ctx(channel="matrix")) is True
    assert dispatcher(default_enabled=False).is_enabled(ctx(channel="matrix")) is False
    assert CharacterRuntimeContextDispatcher().is_enabled(ctx(channel="matrix")) is True


# --- _should_trigger: the seed's 8 strategies ----------------------------------------------

PRIVATE = ctx(scene="private")
GROUP = ctx(scene="group")


def req(**kw) -> SimpleNamespace:
    kw.setdefault("metadata", {})
    return SimpleNamespace(**kw)


def test_trigger_always() -> None:
    d = CharacterRuntimeContextDispatcher()
    assert d._should_trigger("always", GROUP, req())
    assert d._should_trigger("always", PRIVATE, req())


def test_trigger_private_only() -> None:
    d = CharacterRuntimeContextDispatcher()
    assert d._should_trigger("private_only", PRIVATE, req())
    assert not d._should_trigger("private_only", GROUP, req(is_mentioned=True))


def test_trigger_mention_only() -> None:
    d = CharacterRuntimeContextDispatcher()
    assert d._should_trigger("mention_only", GROUP, req(is_mentioned=True))
    assert not d._should_trigger("mention_only", GROUP, req(is_mentioned=False))
    assert not d._should_trigger("mention_only", PRIVATE, req())


def test_trigger_mention_or_private() -> None:
    d = CharacterRuntimeContextDispatcher()
    assert d._should_trigger("mention_or_private", PRIVATE, req())
    assert d._should_trigger("mention_or_private", GROUP, req(metadata={"is_mentioned": True}))
    assert not d._should_trigger("mention_or_private", GROUP, req())


def test_trigger_private_or_reply() -> None:
    d = CharacterRuntimeContextDispatcher()
    assert d._should_trigger("private_or_reply", PRIVATE, req())
    assert d._should_trigger("private_or_reply", GROUP, req(is_reply_to_bot=True))
    assert not d._should_trigger("private_or_reply", GROUP, req(is_mentioned=True))


def test_trigger_keyword_is_case_sensitive_substring() -> None:
    d = dispatcher({"qq": {"trigger": "keyword", "trigger_keywords": ["猫娘", "Neko"]}})
    assert d._should_trigger("keyword", GROUP, req(content="叫一下猫娘吧"))
    assert d._should_trigger("keyword", GROUP, {"content": "hi Neko!"})
    assert not d._should_trigger("keyword", GROUP, req(content="hi neko"))
    assert not d._should_trigger("keyword", GROUP, req(content=""))
    assert not dispatcher()._should_trigger("keyword", GROUP, req(content="猫娘"))


def test_trigger_manual_needs_character_mode() -> None:
    d = CharacterRuntimeContextDispatcher()
    assert d._should_trigger("manual", PRIVATE, req(character_mode=True))
    assert d._should_trigger("manual", GROUP, req(metadata={"character_mode": True}))
    assert not d._should_trigger("manual", PRIVATE, req())
    assert not d._should_trigger("manual", PRIVATE, req(character_mode=False))


def test_trigger_unknown_is_false() -> None:
    d = CharacterRuntimeContextDispatcher()
    assert not d._should_trigger("sometimes", PRIVATE, req(is_mentioned=True))
    assert not d._should_trigger("", PRIVATE, req())


def test_web_session_counts_as_private() -> None:
    d = CharacterRuntimeContextDispatcher()
    web = ctx(channel="web", scene="web_session")
    assert d._should_trigger("private_only", web, req())


def test_trigger_flag_from_context_metadata_when_request_is_silent() -> None:
    d = CharacterRuntimeContextDispatcher()
    context = ctx(metadata={"is_mentioned": True})
    assert d._should_trigger("mention_only", context, req())


# --- _get_meta_field: the seed's 6 cases ---------------------------------------------------


def test_meta_field_from_attribute() -> None:
    get = CharacterRuntimeContextDispatcher._get_meta_field
    assert get(req(is_mentioned=True), "is_mentioned", False) is True


def test_meta_field_from_metadata_dict() -> None:
    d = CharacterRuntimeContextDispatcher()
    assert d._get_meta_field(req(metadata={"is_mentioned": True}), "is_mentioned", False) is True
    assert d._get_meta_field({"metadata": {"is_mentioned": True}}, "is_mentioned") is True


def test_meta_field_attribute_wins_when_not_none() -> None:
    d = CharacterRuntimeContextDispatcher()
    both = req(is_mentioned=False, metadata={"is_mentioned": True})
    assert d._get_meta_field(both, "is_mentioned", None) is False
    unset = req(is_mentioned=None, metadata={"is_mentioned": True})
    assert d._get_meta_field(unset, "is_mentioned", None) is True


def test_meta_field_default_when_absent() -> None:
    d = CharacterRuntimeContextDispatcher()
    assert d._get_meta_field(req(), "is_mentioned", "dflt") == "dflt"
    assert d._get_meta_field(None, "is_mentioned", 7) == 7


def test_meta_field_without_metadata() -> None:
    d = CharacterRuntimeContextDispatcher()
    assert d._get_meta_field(SimpleNamespace(), "is_mentioned", False) is False
    assert d._get_meta_field(SimpleNamespace(metadata=None), "x", 1) == 1
    assert d._get_meta_field({}, "x", 2) == 2


def test_meta_field_reply_flag_on_chat_request() -> None:
    d = CharacterRuntimeContextDispatcher()
    model = ChatRequest(channel="telegram", conversation_id="1", metadata={"is_reply_to_bot": True})
    assert model.is_reply_to_bot is None
    assert d._get_meta_field(model, "is_reply_to_bot", False) is True
    explicit = ChatRequest(channel="telegram", conversation_id="1", is_reply_to_bot=True)
    assert d._get_meta_field(explicit, "is_reply_to_bot", False) is True


# --- memory scope ----------------------------------------------------------------------------


class FixedScopeAdapter:
    channel_name = "qq"

    def __init__(self, scope: str) -> None:
        self.scope = scope

    def resolve_memory_scope(self, context: ChannelRuntimeContext) -> str:
        return self.scope


def test_configured_scope_wins_over_adapter() -> None:
    d = dispatcher({"qq": {"memory_scope": "group"}})
    assert d.resolve_memory_scope(GROUP, FixedScopeAdapter("chat_user")) == "group"


def test_adapter_scope_used_when_not_configured() -> None:
    d = dispatcher({"qq": {"enabled": True}})
    assert d.resolve_memory_scope(GROUP, FixedScopeAdapter("chat_user")) == "chat_user"


def test_channel_default_scope_without_config_or_adapter() -> None:
    d = CharacterRuntimeContextDispatcher()
    assert d.resolve_memory_scope(GROUP) == "group"
    assert d.resolve_memory_scope(ctx(channel="telegram")) == "group"
    assert d.resolve_memory_scope(ctx(channel="web", scene="web_session")) == "conversation"
    assert d.resolve_memory_scope(ctx(channel="matrix")) == "conversation"


@pytest.mark.parametrize("scope", ["group", "group_user"])
def test_private_chat_downgrades_group_scopes_to_user(scope: str) -> None:
    configured = dispatcher({"qq": {"memory_scope": scope}})
    assert configured.resolve_memory_scope(PRIVATE) == "user"
    assert (
        CharacterRuntimeContextDispatcher().resolve_memory_scope(PRIVATE, FixedScopeAdapter(scope))
        == "user"
    )


def test_private_chat_keeps_other_scopes() -> None:
    d = dispatcher({"qq": {"memory_scope": "chat_user"}})
    assert d.resolve_memory_scope(PRIVATE) == "chat_user"


# --- character selection ----------------------------------------------------------------------


class CharacterAdapter(FixedScopeAdapter):
    def __init__(self, character: str | None) -> None:
        super().__init__("group")
        self.character = character

    def select_character_id(self, context: ChannelRuntimeContext) -> str | None:
        return self.character


def test_character_adapter_then_channel_then_global() -> None:
    d = dispatcher({"qq": {"default_character_id": "qq-cat"}}, default_character_id="global")
    assert d.select_character_id(GROUP, CharacterAdapter("picked")) == "picked"
    assert d.select_character_id(GROUP, CharacterAdapter(None)) == "qq-cat"
    assert d.select_character_id(ctx(channel="telegram"), CharacterAdapter(None)) == "global"
    assert CharacterRuntimeContextDispatcher().select_character_id(GROUP) is None


# --- dispatch ---------------------------------------------------------------------------------


def qq_group(mentioned: bool) -> dict:
    segments = [{"type": "text", "data": {"text": "早上好"}}]
    if mentioned:
        segments.insert(0, {"type": "at", "data": {"qq": "42"}})
    return {
        "post_type": "message",
        "message_type": "group",
        "self_id": 42,
        "user_id": 7,
        "group_id": 99,
        "message_id": 5,
        "message": segments,
    }


def test_dispatch_accepts_mentioned_qq_group_message() -> None:
    adapter = QQChannelAdapter()
    request = adapter.parse_event(qq_group(mentioned=True))
    decision = CharacterRuntimeContextDispatcher().dispatch(request, adapter)
    assert isinstance(decision, DispatchDecision)
    assert decision.accepted and decision.reason is None
    assert decision.trigger == "mention_or_private"
    assert decision.memory_scope == "group"  # the seed's channel table
    assert decision.scope_id == "qq:group:99"
    assert decision.context.scene == "group"
    # the seed's config.ini example chooses group_user for QQ, and configuration wins
    configured = dispatcher({"qq": {"memory_scope": "group_user"}}).dispatch(request, adapter)
    assert configured.memory_scope == "group_user"
    assert configured.scope_id == "qq:group:99:user:7"


def test_dispatch_skips_unmentioned_group_message_with_reason() -> None:
    adapter = QQChannelAdapter()
    decision = CharacterRuntimeContextDispatcher().dispatch(
        adapter.parse_event(qq_group(mentioned=False)), adapter
    )
    assert not decision.accepted
    assert decision.reason == SkipReason.not_triggered
    assert decision.scope_id == "qq:group:99"


def test_dispatch_skips_disabled_channel_before_trigger() -> None:
    adapter = QQChannelAdapter()
    d = dispatcher({"qq": {"enabled": False, "trigger": "always"}})
    decision = d.dispatch(adapter.parse_event(qq_group(mentioned=True)), adapter)
    assert (decision.accepted, decision.reason) == (False, SkipReason.disabled)


def test_dispatch_uses_configured_trigger_and_scope() -> None:
    adapter = TelegramChannelAdapter()
    update = {
        "update_id": 1,
        "message": {
            "message_id": 3,
            "from": {"id": 5, "is_bot": False, "first_name": "A"},
            "chat": {"id": -100, "type": "supergroup", "title": "G"},
            "date": 0,
            "text": "hello",
        },
    }
    request = adapter.parse_event(update)
    default = CharacterRuntimeContextDispatcher().dispatch(request, adapter)
    assert (default.accepted, default.trigger, default.scope_id) == (
        False,
        "mention_or_reply",
        "telegram:group:-100",
    )
    d = dispatcher({"telegram": {"trigger": "always", "memory_scope": "chat_user"}})
    configured = d.dispatch(request, adapter)
    assert configured.accepted
    assert configured.scope_id == "telegram:chat:-100:user:5"


def test_dispatch_web_picks_requested_character_and_conversation_scope() -> None:
    adapter = WebChannelAdapter()
    request = adapter.parse_event(
        {"session_id": "s1", "user_id": "u1", "message": "hi", "character_id": "neko"}
    )
    decision = dispatcher(default_character_id="other").dispatch(request, adapter)
    assert decision.accepted
    assert decision.scope_id == "web:conversation:s1"
    assert decision.character_id == "neko"


def test_dispatch_without_adapter_reads_plain_request() -> None:
    request = SimpleNamespace(
        channel="qq",
        conversation_id="c9",
        user_id="u9",
        content="hi",
        metadata={"group_id": "c9", "is_mentioned": True},
    )
    decision = CharacterRuntimeContextDispatcher().dispatch(request)
    assert decision.accepted
    assert decision.scope_id == "qq:group:c9"


def test_dispatch_rejects_none() -> None:
    with pytest.raises(InputError):
        CharacterRuntimeContextDispatcher().dispatch(None)


def test_dispatcher_rejects_bad_mapping_with_section_and_key() -> None:
    with pytest.raises(ConfigError) as err:
        dispatcher({"qq": {"trigger": "loudly"}})
    assert "character_runtime_qq" in str(err.value) and "trigger" in str(err.value)
    with pytest.raises(ConfigError, match="memory_scope"):
        dispatcher({"qq": {"memory_scope": "planet"}})
    with pytest.raises(ConfigError, match="default_enabled"):
        dispatcher(default_enabled="maybe")
