"""Adapter protocol (seed): QQ 7 cases, Telegram 5, Feishu 4, plus QQ bot, Web and the registry."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nekoflow.channels import (
    ChannelRenderPolicy,
    ChannelRuntimeContext,
    CharacterChannelAdapter,
    FeishuChannelAdapter,
    QQBotChannelAdapter,
    QQChannelAdapter,
    TelegramChannelAdapter,
    WebChannelAdapter,
)
from nekoflow.channels.adapters import get_adapter
from nekoflow.errors import ConfigError


def seed_request(conversation_id: str, user_id: str, group_id: str = "", **meta) -> SimpleNamespace:
    """A request shaped like the seed's: group id and flags in metadata."""
    metadata = dict(meta)
    if group_id:
        metadata["group_id"] = group_id
    return SimpleNamespace(conversation_id=conversation_id, user_id=user_id, metadata=metadata)


# --- QQ (7) ---------------------------------------------------------------------------------


def test_qq_implements_protocol() -> None:
    adapter = QQChannelAdapter(bot_uin=10000)
    assert isinstance(adapter, CharacterChannelAdapter)
    assert adapter.channel_name == "qq"


def test_qq_group_context() -> None:
    context = QQChannelAdapter().build_runtime_context(seed_request("g1", "u1", group_id="g1"))
    assert (context.channel, context.scene, context.group_id) == ("qq", "group", "g1")
    assert (context.conversation_id, context.user_id) == ("g1", "u1")


def test_qq_private_context() -> None:
    context = QQChannelAdapter().build_runtime_context(seed_request("u1", "u1"))
    assert (context.scene, context.group_id) == ("private", "")


def test_qq_render_policy() -> None:
    policy = QQChannelAdapter().get_render_policy(ChannelRuntimeContext("qq", "g1", "group"))
    assert isinstance(policy, ChannelRenderPolicy)
    assert policy.supports_markdown is False
    assert policy.max_text_length == 4500


def test_qq_memory_scope_group_in_groups() -> None:
    # The seed's channel table: QQ defaults to group (群) / user (私); config may pick group_user.
    assert (
        QQChannelAdapter().resolve_memory_scope(ChannelRuntimeContext("qq", "g1", "group"))
        == "group"
    )


def test_qq_memory_scope_user_in_private() -> None:
    assert (
        QQChannelAdapter().resolve_memory_scope(ChannelRuntimeContext("qq", "u1", "private"))
        == "user"
    )


def test_qq_select_character_default_is_none() -> None:
    context = ChannelRuntimeContext("qq", "g1", "group")
    assert QQChannelAdapter().select_character_id(context) is None
    chosen = ChannelRuntimeContext("qq", "g1", "group", metadata={"character_id": "neko"})
    assert QQChannelAdapter().select_character_id(chosen) == "neko"


# --- Telegram (5) ----------------------------------------------------------------------------


def test_telegram_implements_protocol() -> None:
    adapter = TelegramChannelAdapter()
    assert isinstance(adapter, CharacterChannelAdapter)
    assert adapter.channel_name == "telegram"


def test_telegram_group_context_keeps_reply_flag() -> None:
    request = seed_request("-100", "5", group_id="-100", is_reply_to_bot=True)
    context = TelegramChannelAdapter().build_runtime_context(request)
    assert (context.channel, context.scene) == ("telegram", "group")
    assert context.metadata["is_reply_to_bot"] is True


def test_telegram_private_context() -> None:
    context = TelegramChannelAdapter().build_runtime_context(seed_request("5", "5"))
    assert context.scene == "private"


def test_telegram_render_policy() -> None:
    policy = TelegramChannelAdapter().get_render_policy(None)
    assert (policy.supports_markdown, policy.max_text_length) == (True, 4096)


def test_telegram_memory_scope() -> None:
    adapter = TelegramChannelAdapter()
    assert adapter.resolve_memory_scope(ChannelRuntimeContext("telegram", "-1", "group")) == "group"
    assert adapter.resolve_memory_scope(ChannelRuntimeContext("telegram", "1", "private")) == "user"


# --- Feishu (4) ------------------------------------------------------------------------------


def test_feishu_implements_protocol() -> None:
    adapter = FeishuChannelAdapter()
    assert isinstance(adapter, CharacterChannelAdapter)
    assert adapter.channel_name == "feishu"


def test_feishu_context_from_dict_request() -> None:
    context = FeishuChannelAdapter().build_runtime_context(
        {"conversation_id": "oc_1", "user_id": "ou_1", "metadata": {"group_id": "oc_1"}}
    )
    assert (context.channel, context.scene, context.group_id) == ("feishu", "group", "oc_1")


def test_feishu_render_policy() -> None:
    policy = FeishuChannelAdapter().get_render_policy(None)
    assert (policy.supports_markdown, policy.supports_image, policy.max_text_length) == (
        True,
        True,
        4000,
    )


def test_feishu_memory_scope() -> None:
    adapter = FeishuChannelAdapter()
    assert adapter.resolve_memory_scope(ChannelRuntimeContext("feishu", "oc", "group")) == "group"
    assert adapter.resolve_memory_scope(ChannelRuntimeContext("feishu", "oc", "private")) == "user"


# --- QQ bot, Web, registry -------------------------------------------------------------------


def test_qqbot_and_web_implement_protocol() -> None:
    for adapter, name in (
        (QQBotChannelAdapter(bot_appid="1"), "qqbot"),
        (WebChannelAdapter(), "web"),
    ):
        assert isinstance(adapter, CharacterChannelAdapter)
        assert adapter.channel_name == name
    assert QQBotChannelAdapter().get_render_policy(None).max_text_length == 2000
    web = WebChannelAdapter()
    context = web.build_runtime_context(SimpleNamespace(conversation_id="s1", user_id="u"))
    assert context.scene == "web_session"
    assert web.resolve_memory_scope(context) == "conversation"
    assert web.get_render_policy(context).supports_stream is True


def test_context_from_chat_request_model_copies_everything() -> None:
    adapter = QQChannelAdapter()
    request = adapter.parse_event(
        {
            "post_type": "message",
            "message_type": "group",
            "self_id": 1,
            "user_id": 2,
            "group_id": 3,
            "message_id": 4,
            "message": "hi",
            "sender": {"card": "名片"},
        }
    )
    context = adapter.build_runtime_context(request)
    assert context.model_dump() == {
        "channel": "qq",
        "conversation_id": "qq:group:3",
        "scene": "group",
        "user_id": "2",
        "user_display_name": "名片",
        "group_id": "3",
        "group_name": "",
        "thread_id": "",
        "raw_event_id": "4",
        "metadata": request.metadata,
    }


def test_get_adapter_registry() -> None:
    qq = get_adapter("qq", bot_uin=123)
    assert isinstance(qq, QQChannelAdapter) and qq.bot_uin == "123"
    assert isinstance(get_adapter("OneBot"), QQChannelAdapter)
    assert isinstance(get_adapter("qqbot", bot_appid="9"), QQBotChannelAdapter)
    assert isinstance(get_adapter("lark"), FeishuChannelAdapter)
    assert get_adapter("telegram", bot_username="@neko_bot").bot_username == "neko_bot"
    assert isinstance(get_adapter("web"), WebChannelAdapter)
    with pytest.raises(ConfigError, match="unknown channel"):
        get_adapter("matrix")
    with pytest.raises(ConfigError, match="bad options"):
        get_adapter("qq", bot_appid="1")


def test_chat_request_with_group_id_only_in_metadata_is_a_group_message() -> None:
    from nekoflow.channels import ChatRequest

    request = ChatRequest(
        channel="qq", conversation_id="g1", user_id="u1", metadata={"group_id": "g1"}
    )
    context = QQChannelAdapter().build_runtime_context(request)
    assert (context.scene, context.group_id) == ("group", "g1")
    sender_as_name = ChatRequest(channel="qq", conversation_id="u1", sender="小明")
    assert QQChannelAdapter().build_runtime_context(sender_as_name).user_display_name == "小明"
