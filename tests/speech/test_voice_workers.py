"""Voice replies with real Celery workers (one worker set for the module), real Redis and the
test database, against the loopback speech server and the loopback Telegram Bot API and OneBot
HTTP API: text then voice, in order, once each; a slow synthesis leaves the text delivered and
the voice chunk failed with a reason; a worker SIGKILLed during synthesis, or during the voice
send, never sends the voice twice (neither platform deduplicates)."""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.delivery import outbox
from nekoflow.settings import Settings
from nekoflow.speech import store as speech_store
from nekoflow.storage import create_all, make_engine
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.deps import TurnDeps
from tests.conftest import PG_URL, REDIS_URL, XDIST_WORKER
from tests.platforms.onebot.conftest import BOT2, private_event
from tests.platforms.onebot.conftest import reset_caches as reset_onebot
from tests.platforms.onebot.fake_onebot import FakeHttpApi
from tests.platforms.telegram.conftest import TOKEN, tg_update
from tests.platforms.telegram.conftest import reset_caches as reset_telegram
from tests.platforms.telegram.fake_botapi import FakeBotApi
from tests.speech.speech_server import KEY, SpeechServer
from tests.turns.conftest import Workers

pytestmark = pytest.mark.slow

BUDGET = 2.0


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Database, Redis, the loopback servers and the workers' environment (module-wide)."""
    tmp = tmp_path_factory.mktemp("voice")
    if PG_URL:
        schema = f"voice_{os.getpid()}{XDIST_WORKER}"
        admin = make_engine(PG_URL)
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
        sep = "&" if "?" in PG_URL else "?"
        db_url = f"{PG_URL}{sep}options=-csearch_path%3D{schema}"
    else:
        db_url = f"sqlite:///{tmp / 'voice.db'}"
    engine = make_engine(db_url)
    create_all(engine)
    with Session(engine) as s:
        s.add(Role.new("钦灵", profile_prompt="你叫钦灵,是一只猫娘。"))
        s.commit()
    client = redis.Redis.from_url(REDIS_URL)
    client.flushdb()
    speech, tg, api = SpeechServer(), FakeBotApi({TOKEN}), FakeHttpApi("api-token")
    bots = [
        {
            "self_id": BOT2,
            "mode": "http",
            "http_api_url": api.url,
            "http_api_token": "api-token",
            "secret": "x",
        }
    ]
    nekoflow_env = {
        "NEKOFLOW_DATABASE_URL": db_url,
        "NEKOFLOW_REDIS_URL": REDIS_URL,
        "NEKOFLOW_BROKER_URL": REDIS_URL,
        "NEKOFLOW_RESULT_BACKEND": REDIS_URL,
        "NEKOFLOW_REDIS_PREFIX": f"nfvoice{XDIST_WORKER}",
        "NEKOFLOW_RUNTIME_CONFIG_PATH": str(tmp / "absent-config.ini"),
        "NEKOFLOW_BROKER_VISIBILITY_TIMEOUT": "2",
        "NEKOFLOW_TURN_LEASE_SECONDS": "4",
        "NEKOFLOW_SWEEP_INTERVAL_SECONDS": "1",
        "NEKOFLOW_DELIVERY_LEASE_SECONDS": "2",
        "NEKOFLOW_DELIVERY_BACKOFF_BASE": "0.05",
        "NEKOFLOW_DELIVERY_BACKOFF_MAX": "0.2",
        "NEKOFLOW_TELEGRAM_API_BASE_URL": tg.url,
        "NEKOFLOW_TELEGRAM_TOKEN": TOKEN,
        "NEKOFLOW_TELEGRAM_MODE": "webhook",
        "NEKOFLOW_TELEGRAM_SECRET_TOKEN": "s3cret-Token_x",
        "NEKOFLOW_TELEGRAM_BOT_NAME": "neko",
        "NEKOFLOW_ONEBOT_BOTS": json.dumps(bots),
        "NEKOFLOW_SPEECH_ENABLED": "true",
        "NEKOFLOW_SPEECH_OPENAI_BASE_URL": speech.url + "/v1",
        "NEKOFLOW_SPEECH_OPENAI_API_KEY": KEY,
        "NEKOFLOW_SPEECH_LINE_BUDGET_SECONDS": str(BUDGET),
        "NEKOFLOW_SPEECH_WAIT_SECONDS": "60",
    }
    saved = {k: os.environ.get(k) for k in nekoflow_env}
    os.environ.update(nekoflow_env)
    reset_telegram()
    reset_onebot()
    from tasks.runtime import set_deps
    from tasks.turns import publish_turn

    settings = Settings(
        database_url=db_url,
        redis_url=REDIS_URL,
        broker_url=REDIS_URL,
        result_backend=REDIS_URL,
        redis_prefix=nekoflow_env["NEKOFLOW_REDIS_PREFIX"],
        runtime_config_path=nekoflow_env["NEKOFLOW_RUNTIME_CONFIG_PATH"],
    )
    set_deps(TurnDeps.from_settings(settings, engine=engine, publish=publish_turn))
    workers = Workers({k: v for k, v in os.environ.items()} | {"PYTHONPATH": str(Path.cwd())}, tmp)
    yield {"engine": engine, "speech": speech, "tg": tg, "api": api, "workers": workers}
    workers.stop_all()
    set_deps(None)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    reset_telegram()
    reset_onebot()
    speech.close()
    tg.close()
    api.close()
    engine.dispose()
    client.close()


@pytest.fixture(scope="module")
def procs(env: dict[str, Any]) -> dict[str, Any]:
    """The module's worker set: turns+llm (with beat: the sweeper), outbound, speech."""
    w: Workers = env["workers"]
    return {
        "turns": w.start(queues="turns,llm", beat=True, name="vturns"),
        "outbound": w.start(queues="outbound", concurrency=1, name="vout0"),
        "speech": w.start(queues="speech", concurrency=1, name="vspeech0"),
    }


def _wait(predicate: Any, what: str, env: dict[str, Any], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}\n{env['workers'].logs()}")
        time.sleep(0.1)


def _run(engine: Engine, conversation: str) -> TurnRun | None:
    with Session(engine) as s:
        runs = s.exec(select(TurnRun).order_by(col(TurnRun.created_at))).all()
    mine = [r for r in runs if r.request.get("conversation_id") == conversation]
    return mine[-1] if mine else None


def _settled(engine: Engine, conversation: str) -> TurnRun | None:
    run = _run(engine, conversation)
    return run if run is not None and run.delivery_status in ("sent", "failed") else None


def _tg_methods(tg: FakeBotApi, chat: int) -> list[str]:
    return [m for m, p in _tg_sends(tg, chat)]


def _tg_sends(tg: FakeBotApi, chat: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        (c.method, c.params)
        for c in tg.calls()
        if c.method in ("sendMessage", "sendVoice") and str(c.params.get("chat_id")) == str(chat)
    ]


def _enqueue_tg(chat: int, text: str) -> None:
    from tasks import enqueue_turn

    enqueue_turn("telegram", tg_update(chat, text), bot="neko")


def test_text_then_voice_in_order_once_each_on_telegram_and_onebot(env, procs) -> None:
    from tasks import enqueue_turn

    engine, tg, api = env["engine"], env["tg"], env["api"]
    _enqueue_tg(9100, "你好呀,钦灵")
    enqueue_turn("qq", private_event(6101, "谢谢你", self_id=BOT2), bot=BOT2)
    _wait(lambda: _settled(engine, "9100") and _settled(engine, "qq:private:6101"), "both", env)
    time.sleep(0.5)  # anything sent twice would arrive meanwhile
    run = _settled(engine, "9100")
    assert run is not None and (run.delivery_status, run.delivery_reason) == ("sent", None)
    parts = speech_store.parts_for(engine, run.turn_id)
    texts = len(run.rendered or [])
    assert parts and all(p.state == "ready" and p.fmt == "ogg_opus" for p in parts)
    assert _tg_methods(tg, 9100) == ["sendMessage"] * texts + ["sendVoice"] * len(parts)
    voice = _tg_sends(tg, 9100)[-1][1]["voice"]
    assert voice["data"].startswith(b"OggS") and voice["content_type"] == "audio/ogg"
    rows = outbox.rows_for(engine, run.turn_id)
    assert [r.kind for r in rows] == ["text"] * texts + ["voice"] * len(parts)
    assert all(r.status == "sent" for r in rows)

    qq = _settled(engine, "qq:private:6101")
    assert qq is not None and qq.delivery_status == "sent"
    kinds = [[s["type"] for s in c["params"]["message"]] for c in api.delivered()]
    qq_parts = speech_store.parts_for(engine, qq.turn_id)
    assert kinds == [["text"]] * len(qq.rendered or []) + [["record"]] * len(qq_parts)
    record = api.delivered()[-1]["params"]["message"][0]["data"]["file"]
    assert base64.b64decode(record.removeprefix("base64://")).startswith(b"ID3")  # mp3
    # each voiced line was synthesized once (the same spoken part twice is a cache hit)
    spoken = [b["input"] for b in env["speech"].calls("/v1/audio/speech")]
    assert len(spoken) == len(set(spoken))


def test_slow_synthesis_leaves_the_text_and_fails_the_voice_with_a_reason(env, procs) -> None:
    engine, tg, speech = env["engine"], env["tg"], env["speech"]
    speech.state.delay = BUDGET + 1.0
    try:
        _enqueue_tg(9200, "今天好累")
        _wait(lambda: _settled(engine, "9200"), "the slow voice settled", env)
    finally:
        speech.state.delay = 0.0
    run = _settled(engine, "9200")
    assert run is not None and run.delivery_status == "sent"
    assert _tg_methods(tg, 9200) == ["sendMessage"] * len(run.rendered or [])
    rows = [r for r in outbox.rows_for(engine, run.turn_id) if r.kind == "voice"]
    assert rows and all(r.status == "failed" for r in rows)
    assert rows[0].error == f"voice: synthesis exceeded its {BUDGET:g}s budget"
    assert f"voice chunk {rows[0].idx} failed" in (run.delivery_reason or "")


def test_sigkill_during_synthesis_voices_once(env, procs) -> None:
    engine, tg, speech, w = env["engine"], env["tg"], env["speech"], env["workers"]
    arrived = speech.hold()
    _enqueue_tg(9300, "我回来啦")
    _wait(arrived.is_set, "the synthesis in flight", env)
    w.kill(procs["speech"])
    speech.release()
    procs["speech"] = w.start(queues="speech", concurrency=1, name="vspeech1")
    _wait(lambda: _settled(engine, "9300"), "the voice after the restart", env)
    time.sleep(0.5)
    run = _settled(engine, "9300")
    assert run is not None and run.delivery_status == "sent", run.delivery_reason
    parts = speech_store.parts_for(engine, run.turn_id)
    assert parts and all(p.state == "ready" for p in parts)  # redelivered and synthesized
    assert _tg_methods(tg, 9300) == ["sendMessage"] * len(run.rendered or []) + ["sendVoice"] * len(
        parts
    )


def test_sigkill_during_the_voice_send_never_sends_it_twice(env, procs) -> None:
    engine, tg, speech, w = env["engine"], env["tg"], env["speech"], env["workers"]
    speech.hold()  # the voice waits until the text is out and the send is held
    _enqueue_tg(9400, "晚安")
    _wait(lambda: "sendMessage" in _tg_methods(tg, 9400), "the text", env)
    run = _run(engine, "9400")
    assert run is not None
    _wait(
        lambda: (
            _tg_methods(tg, 9400).count("sendMessage") == len(_run(engine, "9400").rendered or [])
        ),  # type: ignore[union-attr]
        "all the text",
        env,
    )
    held = tg.hold("9400")
    speech.release()
    _wait(held.is_set, "the voice send in flight", env)
    w.kill(procs["outbound"])
    tg.release("9400")
    procs["outbound"] = w.start(queues="outbound", concurrency=1, name="vout1")
    _wait(lambda: _settled(engine, "9400"), "the delivery settled", env)
    time.sleep(1.0)
    run = _settled(engine, "9400")
    assert run is not None and run.delivery_status == "sent"
    voice_rows = [r for r in outbox.rows_for(engine, run.turn_id) if r.kind == "voice"]
    assert voice_rows[0].status == "unknown"  # in flight when the worker died: not re-sent
    assert _tg_methods(tg, 9400).count("sendVoice") == len(voice_rows)  # the first: once
