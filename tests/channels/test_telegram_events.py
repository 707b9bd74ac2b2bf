"""Telegram Updates: group replies, private photos with captions, forum topics, edits."""

from __future__ import annotations

import pytest

from nekoflow.channels import TelegramChannelAdapter
from nekoflow.channels.adapters.telegram import utf16_slice
from nekoflow.channels.errors import MalformedEventError


def test_group_reply_to_bot(event) -> None:
    request = TelegramChannelAdapter().parse_event(event("telegram_group_reply"))
    assert request.channel == "telegram"
    assert request.scene == "group"
    assert request.conversation_id == request.group_id == "-1001234567890"
    assert request.group_name == "Tea Party"
    assert (request.user_id, request.message_id) == ("111222333", "4521")
    assert request.sender.display_name == "Alice Liddell"
    assert request.content == "你刚才说什么？"
    assert request.is_reply_to_bot is True and request.metadata["is_reply_to_bot"] is True
    assert request.metadata["reply_to_message_id"] == "4519"
    assert request.is_mentioned is False
    assert request.metadata["edited"] is False


def test_reply_to_other_bot_when_username_known(event) -> None:
    raw = event("telegram_group_reply")
    assert TelegramChannelAdapter(bot_username="neko_rp_bot").parse_event(raw).is_reply_to_bot
    assert not TelegramChannelAdapter(bot_username="other_bot").parse_event(raw).is_reply_to_bot


def test_reply_to_a_human_is_not_a_reply_to_bot(event) -> None:
    raw = event("telegram_group_reply")
    raw["message"]["reply_to_message"]["from"] = {"id": 9, "is_bot": False, "first_name": "Hatter"}
    assert TelegramChannelAdapter().parse_event(raw).is_reply_to_bot is False


def test_private_photo_with_caption(event) -> None:
    request = TelegramChannelAdapter(bot_username="neko_rp_bot").parse_event(
        event("telegram_private_photo")
    )
    assert (request.scene, request.group_id) == ("private", "")
    assert request.content == "看看我的猫"
    assert request.is_mentioned is False  # mentions only count in groups
    [photo] = request.attachments
    assert (photo.type, photo.file_id, photo.size) == ("image", "AgACAgIAAxkBAAMRlarge", 98765)


def test_forum_topic_edit_with_mention(event) -> None:
    request = TelegramChannelAdapter(bot_username="Neko_RP_Bot").parse_event(
        event("telegram_forum_edit")
    )
    assert request.metadata["edited"] is True
    assert request.thread_id == "42"
    assert request.is_mentioned is True  # entity offsets are UTF-16 (🐱 is two units)
    assert request.content == "🐱 hi !"
    # the implicit reply to the topic's creation message is not a reply to the bot
    assert request.is_reply_to_bot is False
    assert "reply_to_message_id" not in request.metadata
    assert request.metadata["date"] == 1718000060


def test_mention_without_username_configured_is_not_detected(event) -> None:
    assert TelegramChannelAdapter().parse_event(event("telegram_forum_edit")).is_mentioned is False


def test_mention_of_someone_else_and_bot_command(event) -> None:
    raw = event("telegram_group_reply")
    raw["message"]["text"] = "@someone_else hi"
    raw["message"]["entities"] = [{"offset": 0, "length": 13, "type": "mention"}]
    adapter = TelegramChannelAdapter(bot_username="neko_rp_bot")
    assert adapter.parse_event(raw).is_mentioned is False
    raw["message"]["text"] = "/start@neko_rp_bot"
    raw["message"]["entities"] = [{"offset": 0, "length": 18, "type": "bot_command"}]
    request = adapter.parse_event(raw)
    assert request.is_mentioned is True
    assert request.content == "/start"


def test_channel_post_and_documents() -> None:
    update = {
        "update_id": 5,
        "channel_post": {
            "message_id": 3,
            "sender_chat": {"id": -100777, "title": "News", "type": "channel"},
            "chat": {"id": -100777, "title": "News", "type": "channel"},
            "date": 1,
            "animation": {"file_id": "gif1", "file_name": "a.mp4", "mime_type": "video/mp4"},
            "document": {"file_id": "gif1", "file_name": "a.mp4", "mime_type": "video/mp4"},
        },
    }
    request = TelegramChannelAdapter().parse_event(update)
    assert (request.scene, request.user_id, request.sender.display_name) == (
        "group",
        "-100777",
        "News",
    )
    assert [(a.type, a.file_id) for a in request.attachments] == [("video", "gif1")]


@pytest.mark.parametrize(
    "raw",
    [
        {
            "update_id": 1,
            "callback_query": {"id": "1", "from": {"id": 1, "is_bot": False, "first_name": "A"}},
        },
        {"update_id": 2, "my_chat_member": {"chat": {"id": -1, "type": "group"}}},
        {
            "update_id": 3,
            "message": {
                "message_id": 1,
                "date": 1,
                "chat": {"id": -1, "type": "group", "title": "G"},
                "from": {"id": 2, "is_bot": False, "first_name": "N"},
                "new_chat_members": [{"id": 2, "is_bot": False, "first_name": "N"}],
            },
        },
        {
            "update_id": 4,
            "message": {
                "message_id": 1,
                "date": 1,
                "chat": {"id": 5, "type": "private"},
                "from": {"id": 5, "is_bot": True, "first_name": "Bot"},
                "text": "from a bot",
            },
        },
    ],
)
def test_non_chat_updates_give_none(raw) -> None:
    assert TelegramChannelAdapter().parse_event(raw) is None


def test_bare_message_object_is_accepted(event) -> None:
    message = event("telegram_group_reply")["message"]
    assert TelegramChannelAdapter().parse_event(message).content == "你刚才说什么？"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda u: u["message"].pop("chat"), "message.chat"),
        (lambda u: u["message"]["chat"].pop("id"), "message.chat.id"),
        (lambda u: u["message"]["chat"].pop("type"), "message.chat.type"),
        (lambda u: u["message"].pop("from"), "message.from"),
        (lambda u: u["message"].update(text=5), "message.text"),
        (
            lambda u: u["message"].update(
                entities=[{"type": "mention", "offset": "0", "length": 3}]
            ),
            "message.entities[0].offset",
        ),
        (lambda u: u["message"].update(photo=[{"width": 1}]), "message.photo[0].file_id"),
        (lambda u: u.update(message="hi"), "message"),
        (
            lambda u: u["message"]["reply_to_message"].update(**{"from": {"is_bot": "yes"}}),
            "message.reply_to_message.from.is_bot",
        ),
    ],
)
def test_malformed_updates_name_the_field(event, mutate, field) -> None:
    raw = event("telegram_group_reply")
    mutate(raw)
    with pytest.raises(MalformedEventError) as err:
        TelegramChannelAdapter(bot_username="neko_rp_bot").parse_event(raw)
    assert err.value.field == field


def test_not_an_update() -> None:
    with pytest.raises(MalformedEventError) as err:
        TelegramChannelAdapter().parse_event({"hello": "world"})
    assert err.value.field == "update_id"


def test_utf16_slice() -> None:
    assert utf16_slice("🐱 @bot", 3, 4) == "@bot"
    assert utf16_slice("abc", -1, 2) == ""
    assert utf16_slice("abc", 10, 2) == ""
