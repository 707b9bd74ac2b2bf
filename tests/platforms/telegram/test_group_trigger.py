"""Telegram groups answer @mentions and replies to the bot by default (issue 30): a real group
message of the corpus (teloxide's supergroup capture), as an @mention of the bot, as a reply to
it and as plain chatter, through ``submit_turn`` — the adapter the bot's settings configure
(``NEKOFLOW_TELEGRAM_BOT_USERNAME``), then the dispatcher's default trigger."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nekoflow.channels import CharacterRuntimeContextDispatcher
from nekoflow.channels.context import ChannelRuntimeContext
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.enqueue import submit_turn
from tests.corpus import corpus_event, corpus_file

from .conftest import reset_caches

USERNAME = "NekoFlowBot"


def _group_message() -> dict[str, Any]:
    """teloxide's ``topic_message``: a user's message in a forum supergroup."""
    events = json.loads(corpus_file("telegram_teloxide_fixtures.json").read_text("utf-8"))
    message = corpus_event(events, "message.rs::topic_message")
    message.pop("reply_to_message")  # the topic's creation: no reply to anyone
    return message


def _update(message: dict[str, Any], text: str, message_id: int) -> dict[str, Any]:
    return {
        "update_id": 900 + message_id,
        "message": {**message, "text": text, "message_id": message_id},
    }


def _mention(message_id: int) -> dict[str, Any]:
    update = _update(_group_message(), f"@{USERNAME} 你好呀", message_id)
    update["message"]["entities"] = [{"type": "mention", "offset": 0, "length": len(USERNAME) + 1}]
    return update


def _reply(message_id: int) -> dict[str, Any]:
    message = _group_message()
    update = _update(message, "在吗", message_id)
    update["message"]["reply_to_message"] = {
        "message_id": 3,
        "from": {"id": 42, "is_bot": True, "first_name": "Neko", "username": USERNAME},
        "chat": message["chat"],
        "date": message["date"] - 5,
        "text": "喵?",
    }
    return update


@pytest.fixture
def tg_bot(tg_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    """The bot of ``tg_env`` with its @username set the documented way."""
    monkeypatch.setenv("NEKOFLOW_TELEGRAM_BOT_USERNAME", USERNAME)
    reset_caches()
    return tg_env["NEKOFLOW_TELEGRAM_BOT_NAME"]


def test_the_default_group_trigger_answers_mentions_and_replies_not_chatter(
    deps: TurnDeps, tg_bot: str
) -> None:
    mentioned = submit_turn(deps, "telegram", _mention(11), bot=tg_bot)
    replied = submit_turn(deps, "telegram", _reply(12), bot=tg_bot)
    chatter = submit_turn(deps, "telegram", _update(_group_message(), "今天好热", 13), bot=tg_bot)
    assert mentioned.turn_id and mentioned.status() == "queued", mentioned.reason
    assert replied.turn_id and replied.status() == "queued", replied.reason
    assert chatter.turn_id is None and chatter.reason == "not_triggered"
    run = mentioned.run()
    assert run.request["content"] == "你好呀"  # the bot's handle is not part of what was said
    assert run.scope_id == "telegram:group:-1001847508954"


def test_the_bot_username_setting_reaches_the_adapter_of_that_bot(
    deps: TurnDeps, tg_bot: str
) -> None:
    adapter = deps.adapter("telegram", tg_bot)
    assert adapter.bot_username == USERNAME  # type: ignore[attr-defined]
    request = adapter.parse_event(_mention(21))
    assert request is not None and request.is_mentioned and not request.is_reply_to_bot
    # a bot without a username of its own keeps the channel-wide adapter
    assert getattr(deps.adapter("telegram"), "bot_username", None) == USERNAME
    assert getattr(deps.adapter("telegram", "other"), "bot_username", None) is None


def test_mention_or_reply_and_the_seed_triggers_keep_their_meaning() -> None:
    d = CharacterRuntimeContextDispatcher()
    group = ChannelRuntimeContext("telegram", "-100", "group")
    private = ChannelRuntimeContext("telegram", "7", "private")
    assert d.get_trigger(group) == "mention_or_reply"
    plain, mention = {"content": "x"}, {"content": "x", "is_mentioned": True}
    reply = {"content": "x", "is_reply_to_bot": True}
    for req, expected in ((plain, False), (mention, True), (reply, True)):
        assert d._should_trigger("mention_or_reply", group, req) is expected
    assert d._should_trigger("mention_or_reply", private, plain)
    # the seed's two keep what they did
    assert not d._should_trigger("private_or_reply", group, mention)
    assert not d._should_trigger("mention_or_private", group, reply)
