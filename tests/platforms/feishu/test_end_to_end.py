"""Feishu end to end with real Celery workers, Redis and the test database, against the
loopback Open API: encrypted and signed events in (unsigned, wrongly signed, stale, wrong key,
wrong token → 401; the challenge answered), the reply out exactly once as a reply to the
triggering message, the bot's open_id learnt from the bot info API, an expired tenant token
refreshed, a 429 retried after the platform's reset, and a permanent error code settled."""

from __future__ import annotations

import json
import time

from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from nekoflow.api import create_app
from nekoflow.delivery import outbox
from nekoflow.storage.turns import TurnRun
from tasks import enqueue_turn
from tests.platforms.feishu.conftest import HOOK, VERIFY_TOKEN, message_event, sealed
from tests.platforms.feishu.fake_feishu import FakeFeishu
from tests.turns.conftest import wait_for


def _runs(engine, chat_id: str) -> list[TurnRun]:
    with Session(engine) as s:
        runs = s.exec(
            select(TurnRun).where(TurnRun.channel == "feishu").order_by(col(TurnRun.created_at))
        ).all()
    return [r for r in runs if r.request.get("conversation_id") == chat_id]


def _expected(run: TurnRun) -> list[str]:
    return [m["content"] for m in (run.rendered or [])]


def _settled(engine, chat_id: str, turns: int) -> bool:
    runs = _runs(engine, chat_id)
    return len(runs) == turns and all(r.delivery_status in ("sent", "failed") for r in runs)


def test_events_are_verified_and_answered_once(live, workers, fs_env, fake_fs: FakeFeishu) -> None:
    workers.start(extra_env=fs_env)
    app = create_app(live.settings, engine=live.engine, turn_deps=live)
    event = message_event("oc_group1", "你好呀", chat_type="group", mention_bot=True)
    body, headers = sealed(event)
    with TestClient(app) as client:
        assert client.post(HOOK, content=body).status_code == 401  # no signature
        wrong = headers | {"X-Lark-Signature": "0" * 64}
        assert client.post(HOOK, content=body, headers=wrong).status_code == 401
        stale_body, stale = sealed(event, ts=str(int(time.time()) - 3600))
        assert client.post(HOOK, content=stale_body, headers=stale).status_code == 401
        other_body, other = sealed(event, key="not-our-key")
        assert client.post(HOOK, content=other_body, headers=other).status_code == 401
        bad_token = message_event("oc_group1", "x", token="forged")
        bt_body, bt_headers = sealed(bad_token)
        assert client.post(HOOK, content=bt_body, headers=bt_headers).status_code == 401
        assert (
            client.post("/webhooks/feishu/other", content=body, headers=headers).status_code == 401
        )
        plain = json.dumps(event).encode()  # unencrypted, unsigned while a key is set
        assert client.post(HOOK, content=plain).status_code == 401
        challenge = {"challenge": "ch-1", "token": VERIFY_TOKEN, "type": "url_verification"}
        c_body, _ = sealed(challenge)
        answer = client.post(HOOK, content=c_body)  # Feishu sends the challenge unsigned
        assert answer.status_code == 200 and answer.json() == {"challenge": "ch-1"}
        forged = challenge | {"token": "nope"}
        assert client.post(HOOK, content=sealed(forged)[0]).status_code == 401
        bad_body, bad_headers = sealed(
            {
                "schema": "2.0",
                "header": {"event_type": "im.message.receive_v1", "token": VERIFY_TOKEN},
            }
        )
        bad = client.post(HOOK, content=bad_body, headers=bad_headers)
        assert bad.status_code == 422 and "event" in str(bad.json())
        first = client.post(HOOK, content=body, headers=headers)
        assert first.status_code == 200 and first.json()["status"] == "accepted"
        again = client.post(HOOK, content=body, headers=headers)  # Feishu re-sends
        assert again.json()["turn_id"] == first.json()["turn_id"]
        p2p_body, p2p_headers = sealed(message_event("oc_p2p1", "在吗"))
        assert (
            client.post(HOOK, content=p2p_body, headers=p2p_headers).json()["status"] == "accepted"
        )
    for chat in ("oc_group1", "oc_p2p1"):
        wait_for(lambda chat=chat: _settled(live.engine, chat, 1), 60, chat, workers.logs)
    time.sleep(0.5)
    (run,) = _runs(live.engine, "oc_group1")
    assert run.request["is_mentioned"] is True  # the bot's open_id came from the bot info API
    assert "@_user_1" not in run.request["content"]
    assert fake_fs.state.bot_info_calls == 1
    message_id = event["event"]["message"]["message_id"]
    assert fake_fs.texts(message_id) == _expected(run)
    assert all(r["msg_type"] == "post" for r in fake_fs.replies(message_id))  # Markdown policy
    assert next(r["uuid"] for r in fake_fs.replies(message_id)) == f"{run.turn_id}:0"
    (p2p,) = _runs(live.engine, "oc_p2p1")
    assert (p2p.status, p2p.delivery_status, p2p.bot) == ("done", "sent", "neko")
    assert fake_fs.state.issued == 1  # one tenant token for all, shared through Redis


def test_token_refresh_429_and_permanent_errors(live, workers, fs_env, fake_fs: FakeFeishu) -> None:
    workers.start(extra_env=fs_env | {"NEKOFLOW_FEISHU_BOT_OPEN_ID": "ou_configured"})
    first = message_event("oc_a", "第一句")
    enqueue_turn("feishu", first, bot="neko")
    wait_for(lambda: _settled(live.engine, "oc_a", 1), 60, "first", workers.logs)
    fake_fs.expire_tokens()
    second, gone = message_event("oc_a", "第二句"), message_event("oc_b", "你好")
    fake_fs.fail_next(second["event"]["message"]["message_id"], 429, 99991400, reset="1")
    fake_fs.fail_next(gone["event"]["message"]["message_id"], 400, 230002)
    enqueue_turn("feishu", second, bot="neko")
    enqueue_turn("feishu", gone, bot="neko")
    wait_for(
        lambda: _settled(live.engine, "oc_a", 2) and _settled(live.engine, "oc_b", 1),
        60,
        "settled",
        workers.logs,
    )
    a1, a2 = _runs(live.engine, "oc_a")
    assert (a1.delivery_status, a2.delivery_status) == ("sent", "sent")
    assert fake_fs.texts(second["event"]["message"]["message_id"]) == _expected(a2)
    assert outbox.rows_for(live.engine, a2.turn_id)[0].attempts >= 2
    assert fake_fs.state.issued == 2  # refreshed once after the refusal
    (b,) = _runs(live.engine, "oc_b")
    assert b.delivery_status == "failed" and "bot not in the chat" in b.delivery_reason
    assert fake_fs.state.bot_info_calls == 0  # the bot_open_id setting wins
