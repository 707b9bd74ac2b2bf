"""Every Telegram event of the shared corpus (``../shared/corpus/telegram_*.json``: nonebot's
webhook samples, teloxide's fixtures from real bots) parses as the Bot API says, and every chat
message gets the destination a reply needs. Expectations are computed from the raw JSON by the
protocol's rules, independently of the adapter."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nekoflow.channels.adapters import get_adapter
from nekoflow.delivery.registry import destination_for
from tests.corpus import CORPUS

MESSAGE_KEYS = ("message", "edited_message", "channel_post", "edited_channel_post")
MEDIA = ("photo", "document", "sticker", "voice", "audio", "video", "video_note", "animation")


def _events() -> list[tuple[str, Any]]:
    if not CORPUS.is_dir():
        return []
    out: list[tuple[str, Any]] = []
    for path in sorted(CORPUS.glob("telegram_*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        items = data.items() if isinstance(data, dict) else enumerate(data)
        out += [(f"{path.stem}:{key}", event) for key, event in items]
    return out


EVENTS = _events()


def test_corpus_is_there() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"corpus folder {CORPUS} is absent")
    assert len(EVENTS) >= 50


def _expected(event: dict[str, Any]) -> dict[str, Any] | None:
    key = next((k for k in MESSAGE_KEYS if k in event), None)
    if key is None and "update_id" in event:
        return None  # not a message update (callback query, reactions, member changes…)
    message = event[key] if key else event
    text = message.get("text", message.get("caption", ""))
    if not text.strip() and not any(m in message for m in MEDIA):
        return None  # a service message or content the adapter does not read
    chat, sender, sender_chat = message["chat"], message.get("from"), message.get("sender_chat")
    anonymous = bool(sender and sender_chat and sender_chat["id"] == chat["id"])
    if sender and sender.get("is_bot") and not anonymous:
        return None  # bots do not talk to bots
    topic = message.get("is_topic_message") and "message_thread_id" in message
    if anonymous:
        user = str(sender_chat["id"])
    elif sender:
        user = str(sender["id"])
    else:
        user = str((sender_chat or chat)["id"])
    return {
        "conversation_id": str(chat["id"]),
        "message_id": str(message["message_id"]),
        "private": chat["type"] == "private",
        "text": text.strip(),
        "thread_id": str(message["message_thread_id"]) if topic else "",
        "edited": bool(key and key.startswith("edited")),
        "user_id": user,
        "media": any(m in message for m in MEDIA),
    }


@pytest.mark.parametrize(("name", "event"), EVENTS, ids=[n for n, _ in EVENTS])
def test_corpus_event_parses_as_the_protocol_says(name: str, event: dict[str, Any]) -> None:
    adapter = get_adapter("telegram")
    req = adapter.parse_event(event)
    want = _expected(event)
    if want is None:
        assert req is None
        return
    assert req is not None
    assert req.conversation_id == want["conversation_id"]
    assert req.message_id == want["message_id"]
    assert req.scene == ("private" if want["private"] else "group")
    assert req.content == want["text"]
    assert req.thread_id == want["thread_id"]
    assert req.metadata["edited"] is want["edited"]
    assert req.user_id == want["user_id"]
    assert bool(req.attachments) is want["media"]
    dest = destination_for("telegram", req, "neko")
    assert dest is not None and dest.platform == "telegram" and dest.bot == "neko"
    assert dest.chat_id == want["conversation_id"]
    assert dest.thread_id == (want["thread_id"] or None)
    if not want["private"] and req.metadata.get("telegram_chat_type") != "channel":
        assert dest.reply_to == want["message_id"]


def test_anonymous_group_admin_is_not_dropped_as_a_bot() -> None:
    event = dict(EVENTS).get("telegram_teloxide_fixtures:message.rs::issue_419")
    if event is None:
        pytest.skip("corpus folder is absent")
    req = get_adapter("telegram").parse_event(event)
    assert req is not None and req.content == "text"
    assert req.user_id == "-1001160242915"  # the group, not GroupAnonymousBot's shared id
    assert str(req.sender) == "TITLE2"  # the admin's signature
    assert req.metadata["anonymous_admin"] is True
    bot_event = json.loads(json.dumps(event))
    del bot_event["sender_chat"]  # the same placeholder bot without a sender chat: a bot
    assert get_adapter("telegram").parse_event(bot_event) is None
