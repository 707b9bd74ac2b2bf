"""QQ official bot: gateway payloads and bare ``d``, AT types, mentions, non-chat ops."""

from __future__ import annotations

import base64
import json

import pytest

from nekoflow.channels import QQBotChannelAdapter
from nekoflow.channels.errors import MalformedEventError


def test_group_at_message(event) -> None:
    request = QQBotChannelAdapter(bot_appid="102000001").parse_event(event("qqbot_group_at"))
    assert request.channel == "qqbot"
    assert request.scene == "group"
    assert request.group_id == "C9F778FE6ADF9D1D1DBE395BF744A33A"
    assert request.conversation_id == "qqbot:group:C9F778FE6ADF9D1D1DBE395BF744A33A"
    assert request.user_id == "E4F4AEA33253A2797FB897C50B81D7ED"
    assert request.content == "讲个故事"
    assert request.is_mentioned is True and request.metadata["is_mentioned"] is True
    assert request.message_id.startswith("ROBOT1.0_")
    [image] = request.attachments
    assert (image.type, image.mime_type, image.size) == ("image", "image/jpeg", 81234)
    assert image.url == "https://gchat.qpic.cn/qmeetpic/0/0-0-1A2B/0"  # scheme added
    assert request.metadata["event_type"] == "GROUP_AT_MESSAGE_CREATE"


def test_c2c_message_is_private(event) -> None:
    request = QQBotChannelAdapter().parse_event(event("qqbot_c2c"))
    assert (request.scene, request.conversation_id, request.user_id) == (
        "private",
        "qqbot:private:E4F4AEA33253A2797FB897C50B81D7ED",
        "E4F4AEA33253A2797FB897C50B81D7ED",
    )
    assert request.is_mentioned is False
    assert request.content == "123"


def test_bare_d_is_accepted(event) -> None:
    adapter = QQBotChannelAdapter()
    group = adapter.parse_event(event("qqbot_group_at")["d"])
    assert group.scene == "group" and group.group_id == "C9F778FE6ADF9D1D1DBE395BF744A33A"
    private = adapter.parse_event(event("qqbot_c2c")["d"])
    assert private.scene == "private"
    guild = adapter.parse_event(event("qqbot_guild_message")["d"])
    assert guild.scene == "group" and guild.is_mentioned is True  # bot in mentions


def test_guild_message_mentions_and_content(event) -> None:
    request = QQBotChannelAdapter().parse_event(event("qqbot_guild_message"))
    assert request.is_mentioned is True  # mentions entry with bot: true
    assert request.content == "你好 @路人"
    assert (request.conversation_id, request.user_id) == ("qqbot:group:100010", "1234")
    assert request.metadata["guild_id"] == "18700000000001"
    assert request.sender.display_name == "频道昵称"


def test_guild_mention_by_appid_and_not_mentioned(event) -> None:
    raw = event("qqbot_guild_message")
    raw["d"]["mentions"] = [{"id": "5566", "username": "猫娘Bot"}]
    assert QQBotChannelAdapter(bot_appid="5566").parse_event(raw).is_mentioned is True
    assert QQBotChannelAdapter(bot_appid="999").parse_event(raw).is_mentioned is False
    raw["d"].pop("mentions")
    raw["d"]["content"] = "随便聊聊"
    assert QQBotChannelAdapter().parse_event(raw).is_mentioned is False


def test_at_message_reply_counts_as_reply_to_bot(event) -> None:
    raw = event("qqbot_guild_message")
    raw["t"] = "AT_MESSAGE_CREATE"
    raw["d"]["mentions"] = []
    raw["d"]["content"] = "接着说"
    raw["d"]["message_reference"] = {"message_id": "08ab", "ignore_get_message_error": False}
    request = QQBotChannelAdapter().parse_event(raw)
    assert request.is_mentioned is True
    assert request.is_reply_to_bot is True
    assert request.metadata["reply_to_message_id"] == "08ab"


def test_direct_message_is_private(event) -> None:
    raw = event("qqbot_guild_message")
    raw["t"] = "DIRECT_MESSAGE_CREATE"
    raw["d"]["src_guild_id"] = "555"
    raw["d"]["direct_message"] = True
    request = QQBotChannelAdapter().parse_event(raw)
    assert request.scene == "private"
    assert request.conversation_id == "qqbot:private:1234"
    assert request.metadata["guild_id"] == "18700000000001"  # DMs are answered via /dms/{guild_id}
    assert request.user_id == "1234"
    assert QQBotChannelAdapter().parse_event(raw["d"]).scene == "private"


@pytest.mark.parametrize("content", ["", "  ", None])
def test_message_without_text_or_attachment_gives_none(event, content) -> None:
    # a card/ark message: nothing the character can read and no mention of the bot
    private = event("qqbot_c2c")
    guild = event("qqbot_guild_message")
    guild["d"].pop("mentions")
    for raw in (private, guild):
        if content is None:
            raw["d"].pop("content")
        else:
            raw["d"]["content"] = content
        assert QQBotChannelAdapter().parse_event(raw) is None
        assert QQBotChannelAdapter().parse_event(raw["d"]) is None  # bare d alike


def test_attachment_or_bot_mention_without_text_is_a_message(event) -> None:
    at = event("qqbot_group_at")
    at["d"]["content"] = " "
    assert QQBotChannelAdapter().parse_event(at).attachments  # image only
    at["d"].pop("attachments")
    bare_at = QQBotChannelAdapter().parse_event(at)  # "@bot" alone still asks for an answer
    assert bare_at is not None and bare_at.is_mentioned and bare_at.content == ""
    guild = event("qqbot_guild_message")
    guild["d"]["content"] = "<@!5566>"  # only the bot's mention token
    request = QQBotChannelAdapter().parse_event(guild)
    assert request is not None and request.is_mentioned and request.content == ""


@pytest.mark.parametrize(
    "raw",
    [
        {"op": 10, "d": {"heartbeat_interval": 45000}},
        {"op": 11},
        {"op": 13, "d": {"plain_token": "abc", "event_ts": "1725442341"}},
        {"op": 0, "s": 1, "t": "READY", "d": {"version": 1, "session_id": "x", "user": {}}},
        {
            "op": 0,
            "s": 2,
            "t": "GROUP_ADD_ROBOT",
            "d": {"group_openid": "G", "op_member_openid": "M", "timestamp": 1699240248},
        },
        {"op": 0, "t": "FRIEND_ADD", "d": {"openid": "U", "timestamp": 1}},
        {
            "op": 0,
            "t": "MESSAGE_CREATE",
            "d": {
                "author": {"id": "1", "bot": True, "username": "other bot"},
                "channel_id": "c",
                "guild_id": "g",
                "content": "beep",
                "id": "m",
            },
        },
    ],
)
def test_non_chat_events_give_none(raw) -> None:
    assert QQBotChannelAdapter().parse_event(raw) is None


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"op": 0, "t": "C2C_MESSAGE_CREATE"}, "d"),
        ({"op": 0, "t": "C2C_MESSAGE_CREATE", "d": {"content": "x"}}, "d.author"),
        ({"op": 0, "t": "C2C_MESSAGE_CREATE", "d": {"author": {}}}, "d.author.user_openid"),
        (
            {"op": 0, "t": "GROUP_AT_MESSAGE_CREATE", "d": {"author": {"member_openid": "m"}}},
            "d.group_openid",
        ),
        (
            {"op": 0, "t": "GROUP_AT_MESSAGE_CREATE", "d": {"author": {}, "group_openid": "g"}},
            "d.author.member_openid",
        ),
        ({"op": "0", "t": "C2C_MESSAGE_CREATE", "d": {}}, "op"),
        ({"op": 0, "t": 5}, "t"),
        ({"content": "hi"}, "group_openid"),
        (
            {
                "op": 0,
                "t": "C2C_MESSAGE_CREATE",
                "d": {"author": {"user_openid": "u"}, "attachments": {"url": "x"}},
            },
            "d.attachments",
        ),
        (
            {
                "op": 0,
                "t": "C2C_MESSAGE_CREATE",
                "d": {"author": {"user_openid": "u"}, "content": ["x"]},
            },
            "d.content",
        ),
    ],
)
def test_malformed_events_name_the_field(raw, field) -> None:
    with pytest.raises(MalformedEventError) as err:
        QQBotChannelAdapter().parse_event(raw)
    assert err.value.field == field


def _face(ext: str | None, face_id: str = "13") -> str:
    """A QQ bot emoji tag as the platform writes it into ``content``."""
    tail = "" if ext is None else f',ext="{ext}"'
    return f'<faceType=1,faceId="{face_id}"{tail}>'


def _ext(value: object) -> str:
    """``ext``: base64 of the JSON ``value``."""
    return base64.b64encode(json.dumps(value, ensure_ascii=False).encode()).decode()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (_face(_ext({"text": "[呲牙]"})), "[呲牙]"),  # decodable ext: the face's text
        (_face(_ext({"text": "流泪"})), "[流泪]"),  # a bare name is bracketed
        (_face("eyJ0ZXh0Ijoi5rWB5rOqIn0"), "[流泪]"),  # padding left off
        (_face(None), "[表情]"),  # no ext: OneBot's face placeholder
        ("<faceType=13>", "[表情]"),
        (_face(""), "[表情]"),
        (_face("!!not base64!!"), "[表情]"),  # malformed: placeholder, never raw
        (_face(base64.b64encode(b"\xff\xfe").decode()), "[表情]"),  # not UTF-8
        (_face(base64.b64encode(b"{text").decode()), "[表情]"),  # not JSON
        (_face(_ext(["[呲牙]"])), "[表情]"),  # not an object
        (_face(_ext({"text": ""})), "[表情]"),
        (_face(_ext({"text": 5})), "[表情]"),
        (_face(_ext({"name": "[呲牙]"})), "[表情]"),
        (
            f"早上好{_face(_ext({'text': '[呲牙]'}))}今天{_face(None, '5')}吃什么<faceType=x>",
            "早上好[呲牙]今天[表情]吃什么[表情]",
        ),
    ],
)
def test_face_tags_read_as_their_text(event, content, expected) -> None:
    for name in ("qqbot_c2c", "qqbot_guild_message"):
        raw = event(name)
        raw["d"].pop("mentions", None)  # no mention of the bot: the face alone must count
        raw["d"]["content"] = content
        request = QQBotChannelAdapter().parse_event(raw)
        assert request is not None  # a face alone is still a chat message
        assert request.content == expected
        assert "faceType" not in request.content


def test_face_tag_beside_mentions(event) -> None:
    raw = event("qqbot_guild_message")
    raw["d"]["mentions"] = [{"id": "5566", "username": "猫娘Bot", "bot": True}]
    raw["d"]["content"] = f"<@!5566> {_face(_ext({'text': '[呲牙]'}))} hi"
    request = QQBotChannelAdapter().parse_event(raw)
    assert request.content.strip() == "[呲牙] hi" and request.is_mentioned
