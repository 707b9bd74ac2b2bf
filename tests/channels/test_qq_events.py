"""QQ over OneBot v11: real-looking events (segments and CQ strings), mentions, non-chat events."""

from __future__ import annotations

import json

import pytest

from nekoflow.channels import ChatRequest, QQChannelAdapter
from nekoflow.channels.adapters.qq import parse_cq_string
from nekoflow.channels.errors import MalformedEventError
from nekoflow.errors import InputError

BOT = 3889000001


def test_group_message_mentioning_the_bot(event) -> None:
    request = QQChannelAdapter(bot_uin=BOT).parse_event(event("onebot_group_at"))
    assert isinstance(request, ChatRequest)
    assert request.channel == "qq"
    assert (request.scene, request.conversation_id, request.group_id) == (
        "group",
        "qq:group:736000123",
        "736000123",
    )
    assert (request.user_id, request.message_id) == ("10001", "-2147483001")
    assert request.content == "今天天气怎么样？"  # the bot's @ is removed
    assert request.is_mentioned is True and request.metadata["is_mentioned"] is True
    assert request.is_reply_to_bot is False
    assert request.sender.display_name == "群名片小明"  # group card before nickname
    assert request.sender.role == "member"
    assert request.metadata["source"] == "qq" and request.metadata["channel_type"] == "group"


def test_self_id_is_used_when_bot_uin_is_unset(event) -> None:
    assert QQChannelAdapter().parse_event(event("onebot_group_at")).is_mentioned is True


def test_at_someone_else_is_not_a_mention(event) -> None:
    raw = event("onebot_group_at")
    raw["message"][0]["data"]["qq"] = "55555"
    request = QQChannelAdapter(bot_uin=BOT).parse_event(raw)
    assert request.is_mentioned is False
    assert request.content == "@55555 今天天气怎么样？"


def test_bot_uin_wins_over_self_id(event) -> None:
    # the event was received by another account of a multi-bot setup
    assert QQChannelAdapter(bot_uin=42).parse_event(event("onebot_group_at")).is_mentioned is False


def test_at_all_is_a_mention_in_groups(event) -> None:
    raw = event("onebot_group_at")
    raw["message"] = "[CQ:at,qq=all] 开会了"
    request = QQChannelAdapter(bot_uin=BOT).parse_event(raw)
    assert request.is_mentioned is True
    assert request.content == "@全体成员 开会了"


def test_unmentioned_group_message(event) -> None:
    raw = event("onebot_group_at")
    raw["message"] = [{"type": "text", "data": {"text": "大家好"}}]
    request = QQChannelAdapter(bot_uin=BOT).parse_event(raw)
    assert (request.is_mentioned, request.content) == (False, "大家好")


def test_private_message_with_cq_string(event) -> None:
    request = QQChannelAdapter(bot_uin=BOT).parse_event(event("onebot_private"))
    assert (request.scene, request.conversation_id, request.user_id) == (
        "private",
        "qq:private:10001",
        "10001",
    )
    assert request.group_id == ""
    assert request.content == "你好呀"
    assert request.sender.display_name == "小明"
    assert request.metadata["sub_type"] == "friend"


def test_private_at_is_never_a_mention(event) -> None:
    raw = event("onebot_private")
    raw["message"] = f"[CQ:at,qq={BOT}] hi"
    assert QQChannelAdapter(bot_uin=BOT).parse_event(raw).is_mentioned is False


def test_reply_and_image_in_cq_string(event) -> None:
    request = QQChannelAdapter(bot_uin=BOT).parse_event(event("onebot_group_image_reply"))
    assert request.content == "@10003 看这张图[笑]"
    assert request.metadata["reply_to_message_id"] == "88001"
    assert request.is_reply_to_bot is False
    assert request.sender.display_name == "小红"  # empty card falls back to nickname
    [image] = request.attachments
    assert image.type == "image"
    assert image.file_id == "6F1D3C.image"
    assert image.url == "https://gchat.qpic.cn/gchatpic_new/1/2-3-6F1D3C/0?term=2&is_origin=0"
    assert image["type"] == "image"  # attachments also read like dicts


def test_segment_array_media() -> None:
    raw = {
        "post_type": "message",
        "message_type": "private",
        "self_id": 1,
        "user_id": 2,
        "message": [
            {
                "type": "image",
                "data": {"file": "a.jpg", "url": "https://x/a.jpg", "file_size": "2048"},
            },
            {"type": "record", "data": {"file": "v.amr"}},
            {"type": "face", "data": {"id": "14"}},
            {"type": "file", "data": {"file": "f1", "name": "设定集.pdf"}},
        ],
    }
    request = QQChannelAdapter().parse_event(raw)
    assert [a.type for a in request.attachments] == ["image", "audio", "file"]
    assert request.attachments[0].size == 2048
    assert request.attachments[2].name == "设定集.pdf"
    assert request.content == "[表情]"  # a QQ face reads as the seed's placeholder


def test_json_text_is_accepted(event) -> None:
    request = QQChannelAdapter().parse_event(json.dumps(event("onebot_private")))
    assert request.content == "你好呀"


@pytest.mark.parametrize(
    "raw",
    [
        {
            "post_type": "meta_event",
            "meta_event_type": "heartbeat",
            "self_id": 1,
            "time": 1,
            "status": {"online": True, "good": True},
            "interval": 5000,
        },
        {
            "post_type": "meta_event",
            "meta_event_type": "lifecycle",
            "sub_type": "connect",
            "self_id": 1,
            "time": 1,
        },
        {
            "post_type": "notice",
            "notice_type": "group_increase",
            "sub_type": "approve",
            "group_id": 1,
            "operator_id": 2,
            "user_id": 3,
            "self_id": 1,
            "time": 1,
        },
        {
            "post_type": "notice",
            "notice_type": "group_recall",
            "group_id": 1,
            "user_id": 3,
            "operator_id": 3,
            "message_id": 9,
            "self_id": 1,
            "time": 1,
        },
        {
            "post_type": "request",
            "request_type": "friend",
            "user_id": 3,
            "comment": "hi",
            "flag": "f",
            "self_id": 1,
            "time": 1,
        },
        {
            "post_type": "message_sent",
            "message_type": "group",
            "self_id": 1,
            "user_id": 1,
            "group_id": 5,
            "message": "我自己发的",
        },
        {"status": "ok", "retcode": 0, "data": {"message_id": 1}, "echo": "send-1"},
        {
            "post_type": "message",
            "message_type": "guild",
            "self_id": 1,
            "user_id": 2,
            "guild_id": "g",
            "channel_id": "c",
            "message": "x",
        },
    ],
)
def test_non_chat_events_give_none(raw) -> None:
    assert QQChannelAdapter().parse_event(raw) is None


def test_own_message_gives_none(event) -> None:
    raw = event("onebot_group_at")
    raw["user_id"] = raw["self_id"]
    assert QQChannelAdapter().parse_event(raw) is None


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda e: e.pop("post_type"), "post_type"),
        (lambda e: e.pop("user_id"), "user_id"),
        (lambda e: e.pop("group_id"), "group_id"),
        (lambda e: e.update(user_id=[1]), "user_id"),
        (lambda e: e.update(user_id=True), "user_id"),
        (lambda e: e.update(message=42), "message"),
        (lambda e: (e.pop("message"), e.pop("raw_message")), "message"),
        (lambda e: e.update(message=["oops"]), "message[0]"),
        (lambda e: e.update(message=[{"data": {}}]), "message[0].type"),
        (lambda e: e.update(message=[{"type": "at", "data": {}}]), "message[0].data.qq"),
        (
            lambda e: e.update(message=[{"type": "text", "data": {"text": 5}}]),
            "message[0].data.text",
        ),
        (lambda e: e.update(sender="小明"), "sender"),
    ],
)
def test_malformed_events_name_the_field(event, mutate, field) -> None:
    raw = event("onebot_group_at")
    mutate(raw)
    with pytest.raises(MalformedEventError) as err:
        QQChannelAdapter().parse_event(raw)
    assert err.value.field == field
    assert repr(field) in str(err.value)
    assert isinstance(err.value, InputError)


@pytest.mark.parametrize("raw", [None, 5, "not json", "[1, 2]", b"\xff\xfe", ["list"]])
def test_non_object_events_are_input_errors(raw) -> None:
    with pytest.raises(InputError) as err:
        QQChannelAdapter().parse_event(raw)
    assert err.value.field == "event"


def test_cq_string_unescaping() -> None:
    segments = parse_cq_string("a&amp;b&#91;c&#93;[CQ:share,url=https://x/?a=1&#44;2,title=t]")
    assert segments == [
        {"type": "text", "data": {"text": "a&b[c]"}},
        {"type": "share", "data": {"url": "https://x/?a=1,2", "title": "t"}},
    ]
    assert parse_cq_string("") == []
    assert parse_cq_string("[CQ:face,id=1]") == [{"type": "face", "data": {"id": "1"}}]
