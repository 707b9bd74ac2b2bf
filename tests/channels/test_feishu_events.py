"""Feishu im.message.receive_v1: JSON-string content, p2p vs group, mentions, post, media."""

from __future__ import annotations

import json

import pytest

from nekoflow.channels import FeishuChannelAdapter
from nekoflow.channels.errors import MalformedEventError
from tests.channels.conftest import feishu_event


def test_group_text_with_mentions(event) -> None:
    request = FeishuChannelAdapter(bot_open_id="ou_bot_open_id").parse_event(
        event("feishu_group_text")
    )
    assert request.channel == "feishu"
    assert request.scene == "group"
    assert request.conversation_id == request.group_id == "oc_5ce6d572455d361153b7xx51da133945"
    assert request.user_id == "ou_84aad35d084aa403a838cf73ee18467"
    assert request.content == "@Tom 明天见"  # bot mention removed, others by name
    assert request.is_mentioned is True
    assert request.thread_id == "omt_d4be107c616"
    assert request.metadata["reply_to_message_id"] == "om_5ce6d572455d361153b7cb5xxfsdfsdfdsf"
    assert request.message_id == "om_5ce6d572455d361153b7cb51da133945"


def test_group_text_without_bot_open_id_has_no_mention(event) -> None:
    request = FeishuChannelAdapter().parse_event(event("feishu_group_text"))
    assert request.is_mentioned is False
    assert request.content == "@猫娘 @Tom 明天见"


def test_mention_all(event) -> None:
    raw = event("feishu_group_text")
    raw["event"]["message"]["content"] = json.dumps({"text": "@_all 开会"})
    raw["event"]["message"]["mentions"] = []
    request = FeishuChannelAdapter().parse_event(raw)
    assert request.is_mentioned is True
    assert request.content == "@所有人 开会"


def test_p2p_post_with_link_and_image(event) -> None:
    request = FeishuChannelAdapter().parse_event(event("feishu_p2p_post"))
    assert (request.scene, request.group_id, request.conversation_id) == ("private", "", "oc_p2p_1")
    assert request.content == "周末计划\n去看 这部电影 (https://example.com/film)"
    [image] = request.attachments
    assert (image.type, image.file_id) == ("image", "img_v2_041b28e3")
    assert request.is_mentioned is False


def test_localized_post(event) -> None:
    raw = event("feishu_p2p_post")
    raw["event"]["message"]["content"] = json.dumps(
        {
            "zh_cn": {
                "title": "",
                "content": [
                    [{"tag": "text", "text": "你好"}, {"tag": "emotion", "emoji_type": "SMILE"}]
                ],
            }
        }
    )
    assert FeishuChannelAdapter().parse_event(raw).content == "你好[SMILE]"


@pytest.mark.parametrize(
    ("message_type", "content", "kind", "file_id"),
    [
        ("image", {"image_key": "img_1"}, "image", "img_1"),
        ("file", {"file_key": "file_1", "file_name": "设定.docx"}, "file", "file_1"),
        ("audio", {"file_key": "au_1", "duration": 2000}, "audio", "au_1"),
        ("media", {"file_key": "v_1", "image_key": "img_c"}, "video", "v_1"),
        ("sticker", {"file_key": "st_1"}, "sticker", "st_1"),
    ],
)
def test_media_messages(event, message_type, content, kind, file_id) -> None:
    raw = event("feishu_p2p_post")
    raw["event"]["message"]["message_type"] = message_type
    raw["event"]["message"]["content"] = json.dumps(content)
    request = FeishuChannelAdapter().parse_event(raw)
    [attachment] = request.attachments
    assert (attachment.type, attachment.file_id) == (kind, file_id)
    assert request.content == ""


@pytest.mark.parametrize(
    ("message_type", "content"),
    [
        ("share_chat", '{"chat_id": "oc_1"}'),
        ("share_user", '{"user_id": "ou_1"}'),
        ("location", '{"name": "猫咖", "longitude": "116.39", "latitude": "39.91"}'),
        ("merge_forward", "Merged and Forwarded Message"),  # not JSON: not even decoded
        ("hongbao", '{"text": "[红包]"}'),
        ("text", '{"text": "  "}'),
        ("text", '{"text": "@_user_1"}'),  # only the bot's mention, in a p2p chat
        ("post", '{"title": "", "content": [[]]}'),
    ],
)
def test_messages_without_anything_readable_give_none(message_type, content) -> None:
    raw = feishu_event({}, chat_type="p2p", message_type=message_type)
    raw["event"]["message"]["content"] = content
    assert FeishuChannelAdapter(bot_open_id="ou_bot").parse_event(raw) is None


def test_bot_mention_alone_in_a_group_is_a_message() -> None:
    raw = feishu_event({"text": "@_user_1"})
    request = FeishuChannelAdapter(bot_open_id="ou_bot").parse_event(raw)
    assert request is not None and request.is_mentioned and request.content == ""


@pytest.mark.parametrize(
    "raw",
    [
        {"challenge": "ajls384kdjx98XX", "token": "xxxxxx", "type": "url_verification"},
        {"schema": "2.0", "header": {"event_type": "im.message.message_read_v1"}, "event": {}},
        {"schema": "2.0", "header": {"event_type": "im.chat.member.user.added_v1"}, "event": {}},
    ],
)
def test_non_chat_events_give_none(raw) -> None:
    assert FeishuChannelAdapter().parse_event(raw) is None


def test_app_sender_gives_none(event) -> None:
    raw = event("feishu_group_text")
    raw["event"]["sender"]["sender_type"] = "app"
    assert FeishuChannelAdapter().parse_event(raw) is None


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda e: e["event"]["message"].update(content="{not json"), "event.message.content"),
        (lambda e: e["event"]["message"].update(content={"text": "x"}), "event.message.content"),
        (lambda e: e["event"]["message"].update(content="[1]"), "event.message.content"),
        (lambda e: e["event"]["message"].pop("chat_id"), "event.message.chat_id"),
        (lambda e: e["event"]["message"].pop("chat_type"), "event.message.chat_type"),
        (lambda e: e["event"].pop("sender"), "event.sender"),
        (lambda e: e["event"]["sender"].update(sender_id={}), "event.sender.sender_id.open_id"),
        (lambda e: e.pop("header"), "header"),
        (lambda e: e["event"]["message"].update(mentions=[1]), "event.message.mentions[0]"),
        (lambda e: e.update(schema="1.0"), "schema"),
    ],
)
def test_malformed_events_name_the_field(event, mutate, field) -> None:
    raw = event("feishu_group_text")
    mutate(raw)
    with pytest.raises(MalformedEventError) as err:
        FeishuChannelAdapter().parse_event(raw)
    assert err.value.field == field


def test_encrypted_and_v1_events_are_explained() -> None:
    with pytest.raises(MalformedEventError, match="decrypt"):
        FeishuChannelAdapter().parse_event({"encrypt": "FIAfJPGRmFZWkaxPQ1XrJZVbv2JwdjfLk4jx0k"})
    with pytest.raises(MalformedEventError, match="v1"):
        FeishuChannelAdapter().parse_event(
            {"uuid": "x", "token": "t", "ts": "1", "type": "event_callback", "event": {}}
        )


def test_absurdly_nested_content_is_an_input_error(event) -> None:
    raw = event("feishu_group_text")
    raw["event"]["message"]["content"] = "[" * 100_000 + "]" * 100_000
    with pytest.raises(MalformedEventError) as err:
        FeishuChannelAdapter().parse_event(raw)
    assert err.value.field == "event.message.content"
    with pytest.raises(MalformedEventError):
        FeishuChannelAdapter().parse_event("[" * 100_000)
