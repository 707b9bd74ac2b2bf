"""Text a platform delivers that the database or the model's API cannot take is cleaned at the
adapter: a NUL in a Telegram message (PostgreSQL refuses it in text and JSONB) and a lone UTF-16
surrogate from OneBot (no UTF-8 encoding) get a normal reply through real workers and a
loopback OpenAI-compatible server, instead of failing memory_build / llm_call every attempt."""

from __future__ import annotations

import pytest

from nekoflow.channels.adapters import get_adapter
from nekoflow.channels.sanitize import clean_text
from nekoflow.turns import store
from tasks import enqueue_turn
from tests.platforms.onebot.conftest import private_event
from tests.platforms.telegram.conftest import tg_update

from .llm_server import FakeLLM, completion, user_text_of

REPLY = "喵,我听见啦"


def test_nul_and_lone_surrogate_get_a_normal_reply(live, workers) -> None:
    with FakeLLM(lambda body, n: (200, completion(REPLY), {}, 0.0)) as llm:
        workers.start(extra_env=llm.env(NEKOFLOW_LLM_STREAM="false"))
        telegram = enqueue_turn("telegram", tg_update(5150, "你好\x00呀\x07!"), deliver=False)
        onebot = enqueue_turn("qq", private_event(60061, "hi \ud83d there\x00"), deliver=False)
        for handle in (telegram, onebot):
            reply = handle.wait(timeout=60)
            assert handle.status() == "done", workers.logs()
            assert [m["content"] for m in reply] == [REPLY]
        sent = [user_text_of(call) for call in llm.calls]
    assert "你好呀!" in sent and "hi \ufffd there" in sent
    for handle, text in ((telegram, "你好呀!"), (onebot, "hi \ufffd there")):
        run = store.get_run(live.engine, handle.turn_id)
        assert (run.status, run.request["content"]) == ("done", text)


@pytest.mark.parametrize("channel", ["telegram", "qq", "qqbot", "feishu", "web"])
def test_every_adapter_cleans_what_it_parses(channel: str) -> None:
    """One helper, at the one place every adapter's output passes (``parse_event``)."""
    bad = "a\x00b\x1bc\td\ne\rf \udc00 g"
    events = {
        "telegram": tg_update(1, bad),
        "qq": private_event(2, bad),
        "qqbot": {
            "op": 0,
            "t": "C2C_MESSAGE_CREATE",
            "id": "ev1",
            "d": {
                "id": "m1",
                "content": bad,
                "timestamp": "2024-01-01T00:00:00+08:00",
                "author": {"user_openid": "U1", "union_openid": "U1"},
            },
        },
        "feishu": {
            "schema": "2.0",
            "header": {"event_id": "e1", "event_type": "im.message.receive_v1"},
            "event": {
                "sender": {"sender_id": {"open_id": "ou_1"}, "sender_type": "user"},
                "message": {
                    "message_id": "om_1",
                    "chat_id": "oc_1",
                    "chat_type": "p2p",
                    "message_type": "text",
                    "content": '{"text": "a\\u0000b\\u001bc\\td\\ne\\rf \\udc00 g"}',
                },
            },
        },
        "web": {"session_id": "s\x00", "message": bad, "user_id": "u\x01"},
    }
    request = get_adapter(channel).parse_event(events[channel])
    assert request is not None
    assert request.content == clean_text(bad).strip() == "abc\td\ne\rf \ufffd g"
    for text in (request.conversation_id, request.user_id, request.sender.display_name):
        assert clean_text(text) == text
