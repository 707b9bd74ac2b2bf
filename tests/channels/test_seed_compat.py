"""Seed-compatibility audit: call shapes and behaviours of the seed's dispatcher and adapters
that callers written against the seed (channel-runtime.md) rely on."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from unittest.mock import MagicMock

import pytest

from nekoflow.channels import (
    ChannelRenderPolicy,
    ChannelRuntimeContext,
    CharacterRuntimeContextDispatcher,
    FeishuChannelAdapter,
    QQBotChannelAdapter,
    QQChannelAdapter,
    TelegramChannelAdapter,
    build_scope_id,
)
from nekoflow.errors import ConfigError, InputError
from tests.channels.conftest import feishu_event

GROUP = ChannelRuntimeContext(
    channel="qq", conversation_id="qq:group:1000", scene="group", user_id="2000", group_id="1000"
)
PRIVATE = ChannelRuntimeContext(
    channel="qq", conversation_id="qq:private:2000", scene="private", user_id="2000"
)


class FakeAdapter:
    """The seed's test double: always group_user."""

    channel_name = "qq"

    def build_runtime_context(self, chat_request):
        return GROUP

    def get_render_policy(self, context):
        return ChannelRenderPolicy()

    def select_character_id(self, context):
        return None

    def resolve_memory_scope(self, context):
        return "group_user"

    def render_result(self, result, context):
        return [{"type": "text", "content": result.text}]


# --- constructor shapes -------------------------------------------------------------------------


def test_dispatcher_takes_the_seed_positional_order_runtime_then_config() -> None:
    runtime = object()
    config = {"channels": {"qq": {"character_runtime": {"enabled": False}}}}
    dispatcher = CharacterRuntimeContextDispatcher(runtime, config)
    assert dispatcher.runtime is runtime
    assert dispatcher.is_enabled(GROUP) is False


def test_dispatcher_single_positional_runtime_or_config() -> None:
    runtime = MagicMock()
    assert CharacterRuntimeContextDispatcher(runtime).runtime is runtime
    assert CharacterRuntimeContextDispatcher(runtime).is_enabled(GROUP) is True
    off = CharacterRuntimeContextDispatcher({"character_runtime": {"default_enabled": False}})
    assert off.runtime is None and off.is_enabled(GROUP) is False
    keywords = CharacterRuntimeContextDispatcher(
        runtime=None, config={"character_runtime": {"default_enabled": True}}
    )
    assert keywords.is_enabled(GROUP) is True


def test_dispatcher_rejects_ambiguous_arguments() -> None:
    with pytest.raises(TypeError):
        CharacterRuntimeContextDispatcher({}, config={})
    with pytest.raises(TypeError):
        CharacterRuntimeContextDispatcher(None, {}, {})
    with pytest.raises(ConfigError):
        CharacterRuntimeContextDispatcher(runtime=None, config=42)


def test_dispatcher_accepts_a_config_ini_path(tmp_path: Path) -> None:
    path = tmp_path / "config.ini"
    path.write_text("[character_runtime_qq]\nenabled = false\n", encoding="utf-8")
    assert CharacterRuntimeContextDispatcher(str(path)).is_enabled(GROUP) is False
    assert CharacterRuntimeContextDispatcher(config=path).is_enabled(GROUP) is False


# --- the seed dispatcher's getters ---------------------------------------------------------------


def test_seed_getters() -> None:
    dispatcher = CharacterRuntimeContextDispatcher(
        runtime=None,
        config={
            "character_runtime": {"default_character_id": "neko"},
            "channels": {
                "qq": {
                    "character_runtime": {
                        "trigger": "mention_only",
                        "memory_scope": "group_user",
                        "legacy_prompt_enabled": True,
                    }
                },
                "feishu": {"character_runtime": {"default_character_id": "lark_cat"}},
            },
        },
    )
    assert dispatcher.get_trigger_strategy(GROUP) == "mention_only"
    assert dispatcher.get_memory_scope(GROUP) == "group_user"
    assert dispatcher.get_default_character_id(GROUP) == "neko"
    assert dispatcher.get_legacy_prompt_enabled(GROUP) is True
    feishu = ChannelRuntimeContext(channel="feishu", conversation_id="oc_1", scene="group")
    assert dispatcher.get_default_character_id(feishu) == "lark_cat"
    assert dispatcher.get_legacy_prompt_enabled(feishu) is False
    # unconfigured: the seed table's defaults
    plain = CharacterRuntimeContextDispatcher()
    assert plain.get_trigger_strategy(GROUP) == "mention_or_private"
    assert plain.get_memory_scope(GROUP) == "group"
    assert plain.get_default_character_id(GROUP) == ""
    assert plain.select_character_id(GROUP) is None


def test_registered_adapter_is_used_by_dispatch() -> None:
    dispatcher = CharacterRuntimeContextDispatcher(runtime=None, config={})
    adapter = FakeAdapter()
    dispatcher.register_adapter(adapter)
    assert dispatcher.get_adapter("qq") is adapter
    assert dispatcher.get_adapter("telegram") is None
    request = SimpleNamespace(channel="qq", content="hi", is_mentioned=True, metadata={})
    decision = dispatcher.dispatch(request)
    assert decision.accepted
    assert decision.scope_id == "qq:group:1000:user:2000"  # the adapter's group_user scope
    with pytest.raises(InputError):
        dispatcher.register_adapter(SimpleNamespace(channel_name=""))


# --- trigger flags -----------------------------------------------------------------------------


def test_flags_from_metadata_when_the_attribute_is_not_a_boolean() -> None:
    dispatcher = CharacterRuntimeContextDispatcher(runtime=None, config={})
    # MagicMock requests: unset attributes are Mock objects, not flags; metadata decides
    request = MagicMock()
    request.metadata = {"is_mentioned": True}
    assert dispatcher._should_trigger("mention_only", GROUP, request) is True
    request = MagicMock()
    request.metadata = {"is_reply_to_bot": False}
    assert dispatcher._should_trigger("private_or_reply", GROUP, request) is False
    # truthy ints and strings as some workers write them
    assert dispatcher._should_trigger(
        "mention_only", GROUP, SimpleNamespace(metadata={"is_mentioned": 1})
    )
    assert dispatcher._should_trigger(
        "mention_only", GROUP, SimpleNamespace(metadata={"is_mentioned": "true"})
    )
    assert not dispatcher._should_trigger(
        "mention_only", GROUP, SimpleNamespace(metadata={"is_mentioned": "false"})
    )
    # an explicit attribute still wins over metadata
    assert not dispatcher._should_trigger(
        "mention_only", GROUP, SimpleNamespace(is_mentioned=False, metadata={"is_mentioned": True})
    )


# --- render policy -----------------------------------------------------------------------------


def test_render_policy_is_mutable_like_the_seed_dataclass_and_adapters_hand_out_copies() -> None:
    policy = ChannelRenderPolicy()
    policy.max_text_length = 10
    assert policy.max_text_length == 10
    adapter = QQChannelAdapter()
    mine = adapter.get_render_policy(PRIVATE)
    mine.max_text_length = 5
    assert adapter.get_render_policy(PRIVATE).max_text_length == 4500
    assert QQChannelAdapter().get_render_policy(PRIVATE).max_text_length == 4500


@pytest.mark.parametrize(
    ("adapter", "markdown", "image", "limit"),
    [
        (QQChannelAdapter(), False, True, 4500),
        (QQBotChannelAdapter(), False, True, 2000),
        (TelegramChannelAdapter(), True, True, 4096),
        (FeishuChannelAdapter(), True, True, 4000),
    ],
)
def test_render_policy_table(adapter, markdown: bool, image: bool, limit: int) -> None:
    policy = adapter.get_render_policy(PRIVATE)
    assert (policy.supports_markdown, policy.supports_image, policy.max_text_length) == (
        markdown,
        image,
        limit,
    )
    assert policy.split_strategy == "paragraph"
    assert policy.supports_stream is False


def test_seed_fake_adapter_scope_fallback() -> None:
    # the seed's own example: group_user without a group id uses the conversation id
    context = ChannelRuntimeContext(
        channel="qq", conversation_id="qq:group:1000", scene="group", user_id="2000", group_id=""
    )
    assert build_scope_id(context, "group_user") == "qq:group:qq:group:1000:user:2000"
    dispatcher = CharacterRuntimeContextDispatcher(
        runtime=None,
        config={"channels": {"qq": {"character_runtime": {"memory_scope": "conversation"}}}},
    )
    assert dispatcher.resolve_memory_scope(GROUP, FakeAdapter()) == "conversation"


# --- conversation ids: unique per chat inside a channel -----------------------------------------


def test_qq_private_and_group_with_the_same_number_do_not_share_a_conversation() -> None:
    adapter = QQChannelAdapter(bot_uin=42)
    private = adapter.parse_event(
        {
            "post_type": "message",
            "message_type": "private",
            "sub_type": "friend",
            "self_id": 42,
            "user_id": 12345,
            "message_id": 1,
            "message": [{"type": "text", "data": {"text": "hi"}}],
            "raw_message": "hi",
            "sender": {"user_id": 12345, "nickname": "小明"},
        }
    )
    group = adapter.parse_event(
        {
            "post_type": "message",
            "message_type": "group",
            "sub_type": "normal",
            "self_id": 42,
            "group_id": 12345,
            "user_id": 777,
            "message_id": 2,
            "message": "[CQ:at,qq=42] hi",
            "raw_message": "[CQ:at,qq=42] hi",
            "sender": {"user_id": 777, "nickname": "阿花", "card": "", "role": "admin"},
        }
    )
    assert private.conversation_id == "qq:private:12345"
    assert group.conversation_id == "qq:group:12345"
    dispatcher = CharacterRuntimeContextDispatcher(
        runtime=None,
        config={"channels": {"qq": {"character_runtime": {"memory_scope": "conversation"}}}},
    )
    scopes = {dispatcher.dispatch(r, adapter).scope_id for r in (private, group)}
    assert scopes == {"qq:conversation:qq:private:12345", "qq:conversation:qq:group:12345"}
    # the seed's metadata keys
    assert group.metadata["group_id"] == "12345"
    assert group.metadata["is_mentioned"] is True
    assert group.metadata["sender_role"] == "admin"
    assert group.metadata["raw_message"] == "[CQ:at,qq=42] hi"
    assert group.sender == "阿花" and group.content == "hi"
    # default scopes are untouched by the prefix: group → group number, private → user
    default = CharacterRuntimeContextDispatcher()
    assert default.dispatch(group, adapter).scope_id == "qq:group:12345"
    assert default.dispatch(private, adapter).scope_id == "qq:user:12345"


def test_qqbot_relay_and_bare_group_payloads() -> None:
    d = {
        "author": {"id": "M1", "member_openid": "M1"},
        "content": " 讲个故事",
        "group_openid": "G1",
        "id": "ROBOT1.0_x",
        "timestamp": "2023-11-06T13:37:18+08:00",
    }
    adapter = QQBotChannelAdapter()
    bare = adapter.parse_event(d)
    # a group payload without its envelope is the AT event a group bot normally gets
    assert bare.is_mentioned is True and bare.metadata["event_type"] == "GROUP_AT_MESSAGE_CREATE"
    relay = adapter.parse_event({"event_type": "GROUP_AT_MESSAGE_CREATE", "event": d})
    assert relay.conversation_id == "qqbot:group:G1" and relay.is_mentioned is True
    assert relay.metadata["qqbot_scene"] == "group"
    assert relay.metadata["qqbot_group_openid"] == "G1"
    assert relay.metadata["qqbot_user_openid"] == "M1"
    assert adapter.parse_event({"event_type": "GROUP_ADD_ROBOT", "event": {}}) is None
    context = adapter.build_runtime_context(
        SimpleNamespace(
            conversation_id="qqbot:group:G1",
            user_id="M1",
            metadata={"qqbot_scene": "group", "qqbot_group_openid": "G1"},
        )
    )
    assert (context.scene, context.group_id) == ("group", "G1")


# --- Telegram and Feishu: the seed's names and keys ---------------------------------------------


def _tg_group_reply(edit_date: int | None = None) -> dict:
    message = {
        "message_id": 52,
        "from": {"id": 7, "is_bot": False, "first_name": "Neko", "username": "neko"},
        "chat": {"id": -1001234567890, "title": "猫窝", "type": "supergroup"},
        "date": 1700000000,
        "text": "然后呢？",
        "reply_to_message": {
            "message_id": 51,
            "from": {"id": 999, "is_bot": True, "first_name": "Cat", "username": "cat_bot"},
            "chat": {"id": -1001234567890, "title": "猫窝", "type": "supergroup"},
            "date": 1699999990,
            "text": "从前有座山",
        },
    }
    if edit_date is None:
        return {"update_id": 10, "message": message}
    return {"update_id": 11, "edited_message": {**message, "edit_date": edit_date}}


def test_telegram_parse_update_and_seed_metadata() -> None:
    adapter = TelegramChannelAdapter()
    request = adapter.parse_update(_tg_group_reply())
    assert request == adapter.parse_event(_tg_group_reply())
    assert request.is_reply_to_bot is True and request.metadata["is_reply_to_bot"] is True
    assert request.metadata["telegram_chat_id"] == "-1001234567890"
    assert request.metadata["telegram_chat_type"] == "supergroup"
    assert request.metadata["telegram_update_id"] == 10
    assert request.metadata["telegram_message_id"] == "52"
    decision = CharacterRuntimeContextDispatcher().dispatch(request, adapter)
    assert decision.accepted and decision.trigger == "mention_or_reply"
    assert decision.scope_id == "telegram:group:-1001234567890"


def test_telegram_each_edit_has_its_own_dedupe_marker() -> None:
    adapter = TelegramChannelAdapter()
    first = adapter.parse_event(_tg_group_reply(edit_date=1700000100))
    second = adapter.parse_event(_tg_group_reply(edit_date=1700000200))
    assert first.metadata["edited"] is True
    assert (first.metadata["edit_date"], second.metadata["edit_date"]) == (1700000100, 1700000200)
    assert "edit_date" not in adapter.parse_event(_tg_group_reply()).metadata


def test_feishu_seed_keys_challenge_and_image() -> None:
    adapter = FeishuChannelAdapter(bot_open_id="ou_bot")
    request = adapter.parse_event(feishu_event({"text": "@_user_1 早上好"}))
    assert request.content == "早上好" and request.is_mentioned is True
    assert request.metadata["feishu_chat_id"] == "oc_5ce6d572455d361153b7xx51da133945"
    assert request.metadata["feishu_chat_type"] == "group"
    assert request.metadata["feishu_sender_id"] == "ou_84aa"
    assert request.metadata["feishu_message_type"] == "text"
    # without the bot's open_id the mention reads as the name and the trigger is still always
    plain = FeishuChannelAdapter().parse_event(feishu_event({"text": "@_user_1 早上好"}))
    assert plain.content == "@猫猫 早上好"
    assert CharacterRuntimeContextDispatcher().dispatch(plain, FeishuChannelAdapter()).accepted
    image = adapter.parse_event(
        feishu_event({"image_key": "img_v2_abc"}, chat_type="p2p", message_type="image")
    )
    assert image.scene == "private" and image.content == ""
    assert image.attachments[0]["image_key"] == "img_v2_abc"
    assert image.attachments[0].file_id == "img_v2_abc"
    challenge = {"challenge": "ajls384kdjx98XX", "token": "xxxxxx", "type": "url_verification"}
    assert adapter.parse_challenge(challenge) == "ajls384kdjx98XX"
    assert adapter.parse_event(challenge) is None
    assert adapter.parse_challenge(feishu_event({"text": "hi"})) is None
    assert adapter.parse_challenge(None) is None


def test_qq_seed_attachment_keys_and_nameless_sender() -> None:
    request = QQChannelAdapter().parse_event(
        {
            "post_type": "message",
            "message_type": "private",
            "self_id": 1,
            "user_id": 2,
            "message_id": 3,
            "message": "[CQ:image,file=abc.image,url=https://gchat.qpic.cn/x&amp;y=1]",
        }
    )
    attachment = request.attachments[0]
    assert (attachment["type"], attachment["source"], attachment["file"]) == (
        "image",
        "qq",
        "abc.image",
    )
    assert attachment["url"] == "https://gchat.qpic.cn/x&y=1"
    assert request.sender == "QQ用户2"
