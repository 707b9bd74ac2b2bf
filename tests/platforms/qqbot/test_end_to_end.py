"""QQ official bot end to end with real Celery workers, Redis and the test database, against
the loopback OpenAPI: signed callbacks in (unsigned / wrongly signed → 401), the reply out as a
passive reply exactly once, an expired token refreshed, a 429 retried, the passive-reply
window enforced, and a worker SIGKILLed while the platform holds a send."""

from __future__ import annotations

import time

import pytest
import redis
from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from nekoflow.api import create_app
from nekoflow.delivery import outbox
from nekoflow.storage.turns import TurnRun
from tasks import enqueue_turn
from tests.platforms.qqbot.conftest import HOOK, c2c_event, group_event, now_iso, signed
from tests.platforms.qqbot.fake_qq import FakeQQ
from tests.turns.conftest import wait_for


def _runs(engine, conversation: str) -> list[TurnRun]:
    with Session(engine) as s:
        runs = s.exec(
            select(TurnRun).where(TurnRun.channel == "qqbot").order_by(col(TurnRun.created_at))
        ).all()
    return [r for r in runs if r.request.get("conversation_id") == conversation]


def _expected(engine, conversation: str) -> list[str]:
    return [m["content"] for r in _runs(engine, conversation) for m in (r.rendered or [])]


def _settled(engine, conversation: str, turns: int) -> bool:
    runs = _runs(engine, conversation)
    return len(runs) == turns and all(r.delivery_status in ("sent", "failed") for r in runs)


def _info(engine, fake: FakeQQ, conversation: str) -> str:
    runs = [
        (r.turn_id, r.status, r.delivery_status, r.delivery_reason)
        for r in _runs(engine, conversation)
    ]
    return f"\nruns: {runs}\ncalls: {[(c.path, c.body) for c in fake.calls()]}"


def test_signed_callbacks_are_answered_once(live, workers, qq_env, fake_qq: FakeQQ) -> None:
    workers.start(extra_env=qq_env)
    app = create_app(live.settings, engine=live.engine, turn_deps=live)
    event = c2c_event("U100", "你好呀,钦灵")
    body, headers = signed(event)
    with TestClient(app) as client:
        assert client.post(HOOK, content=body).status_code == 401  # unsigned
        wrong_body, wrong = signed(event, secret="another-bots-secret")
        assert client.post(HOOK, content=wrong_body, headers=wrong).status_code == 401
        tampered = body.replace("钦灵".encode(), "莱姆".encode())
        assert client.post(HOOK, content=tampered, headers=headers).status_code == 401
        other = client.post("/webhooks/qqbot/other", content=body, headers=headers)
        assert other.status_code == 401
        bad_body, bad_headers = signed({"op": 0, "t": "C2C_MESSAGE_CREATE", "d": {"id": "x"}})
        bad = client.post(HOOK, content=bad_body, headers=bad_headers)
        assert bad.status_code == 422 and "author" in str(bad.json())
        validation = {
            "op": 13,
            "d": {"plain_token": "Arq0D5A61EgUu4OxUvOp", "event_ts": "1725442341"},
        }
        v_body, v_headers = signed(validation)
        answer = client.post(HOOK, content=v_body, headers=v_headers).json()
        assert answer["signature"].startswith("87befc99c42c651b")
        oracle = {"op": 13, "d": {"plain_token": '{"op":0}', "event_ts": "1"}}
        assert client.post(HOOK, json=oracle).status_code == 422  # never signs JSON
        first = client.post(HOOK, content=body, headers=headers)
        assert first.status_code == 200 and first.json()["op"] == 12
        assert first.json()["status"] == "accepted"
        again = client.post(HOOK, content=body, headers=headers)  # QQ re-sends the event
        assert again.json()["turn_id"] == first.json()["turn_id"]
        g_body, g_headers = signed(group_event("G200", "M1", "大家好"))
        assert client.post(HOOK, content=g_body, headers=g_headers).json()["status"] == "accepted"
    for conv in ("qqbot:private:U100", "qqbot:group:G200"):
        wait_for(
            lambda conv=conv: _settled(live.engine, conv, 1),
            60,
            conv,
            lambda conv=conv: workers.logs() + _info(live.engine, fake_qq, conv),
        )
    time.sleep(0.5)
    assert fake_qq.texts("U100") == _expected(live.engine, "qqbot:private:U100")
    assert fake_qq.texts("G200") == _expected(live.engine, "qqbot:group:G200")
    sent = fake_qq.sent("U100")
    assert [m["msg_seq"] for m in sent] == list(range(1, len(sent) + 1))
    assert all(m["msg_id"] == event["d"]["id"] for m in sent)
    assert fake_qq.state.issued == 1  # one token for both sends, shared through Redis
    (run,) = _runs(live.engine, "qqbot:private:U100")
    assert (run.status, run.delivery_status, run.bot) == ("done", "sent", "neko")


def test_expired_token_429_and_the_reply_window(live, workers, qq_env, fake_qq: FakeQQ) -> None:
    workers.start(extra_env=qq_env | {"NEKOFLOW_QQBOT_C2C_REPLY_WINDOW_SECONDS": "60"})
    enqueue_turn("qqbot", c2c_event("U300", "第一句"), bot="neko")
    wait_for(lambda: _settled(live.engine, "qqbot:private:U300", 1), 60, "first", workers.logs)
    fake_qq.expire_tokens()  # the cached token is refused now
    fake_qq.fail_next("U300", 429, 22009)
    enqueue_turn("qqbot", c2c_event("U300", "第二句"), bot="neko")
    enqueue_turn("qqbot", c2c_event("U400", "很久以前", stamp=now_iso(-3600)), bot="neko")
    wait_for(
        lambda: (
            _settled(live.engine, "qqbot:private:U300", 2)
            and _settled(live.engine, "qqbot:private:U400", 1)
        ),
        60,
        "retried and refused",
        lambda: workers.logs() + _info(live.engine, fake_qq, "qqbot:private:U300"),
    )
    assert [r.delivery_status for r in _runs(live.engine, "qqbot:private:U300")] == ["sent", "sent"]
    assert fake_qq.texts("U300") == _expected(live.engine, "qqbot:private:U300")
    assert fake_qq.state.issued == 2  # refreshed once after the refusal
    (late,) = _runs(live.engine, "qqbot:private:U400")
    assert late.delivery_status == "failed" and "window of 60s has passed" in late.delivery_reason
    assert fake_qq.calls("/v2/users/U400") == []  # refused before calling: no retry loop


@pytest.mark.slow
def test_sigkill_during_deliver_sends_each_chunk_once(
    live, workers, qq_env, fake_qq: FakeQQ, redis_client: redis.Redis
) -> None:
    crash_env = qq_env | {
        "NEKOFLOW_BROKER_VISIBILITY_TIMEOUT": "2",
        "NEKOFLOW_TURN_LEASE_SECONDS": "4",
        "NEKOFLOW_LLM_TIMEOUT": "3",
        "NEKOFLOW_SWEEP_INTERVAL_SECONDS": "1",
        "NEKOFLOW_DELIVERY_LEASE_SECONDS": "2",
    }
    arrived = fake_qq.hold("U700")  # the platform has the message; the worker dies waiting

    def start(n: int):
        return workers.start(
            app="tests.turns.crash_app", concurrency=1, beat=True, extra_env=crash_env, name=f"q{n}"
        )

    proc = start(0)
    enqueue_turn("qqbot", c2c_event("U700", "谢谢你"), bot="neko")
    enqueue_turn("qqbot", group_event("G700", "M7", "谢谢你"), bot="neko")
    convs = ("qqbot:private:U700", "qqbot:group:G700")
    restarts, killed = 0, False
    deadline = time.monotonic() + 180
    while not all(_settled(live.engine, c, 1) for c in convs):
        assert time.monotonic() < deadline, workers.logs() + _info(live.engine, fake_qq, convs[0])
        if not killed and arrived.is_set():
            workers.kill(proc)
            killed = True
            fake_qq.release("U700")
        if proc.poll() is not None:
            restarts += 1
            proc = start(restarts)
        time.sleep(0.1)
    assert killed
    time.sleep(1.0)
    assert fake_qq.texts("U700") == _expected(live.engine, convs[0])  # once, in order
    assert fake_qq.texts("G700") == _expected(live.engine, convs[1])
    assert fake_qq.state.duplicates >= 1  # the in-flight chunk was re-sent and refused as a dup
    (run,) = _runs(live.engine, convs[0])
    assert run.delivery_status == "sent"
    assert all(r.status == "sent" for r in outbox.rows_for(live.engine, run.turn_id))
