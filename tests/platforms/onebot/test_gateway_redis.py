"""``nekoflow gateway onebot`` (a real process) and an unreachable or emptied Redis, with a
private throwaway redis-server (never the shared one): the gateway refuses to start while
Redis or the database is unreachable (one line naming the variable, the password hidden);
while running it stops accepting bots when an event cannot be stored and stores that event once
Redis is back (never acknowledged and dropped); after Redis lost its data (restarted with
nothing on disk, or flushed) replies still reach the bot — the consumer group is made again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session, select

from nekoflow.storage import create_all, make_engine
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import TurnRun
from tests.platforms.gateway_proc import (
    GatewayProc,
    PrivateRedis,
    free_port,
    gateway_env,
    wait_until,
)
from tests.platforms.onebot.conftest import BOT, TOKEN, private_event
from tests.platforms.onebot.fake_onebot import FakeNapCat
from tests.turns.conftest import Workers

pytestmark = pytest.mark.slow


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def db_file(tmp_path: Path) -> str:
    """A SQLite database with one character (events become turns)."""
    url = f"sqlite:///{tmp_path / 'gw.db'}"
    engine = make_engine(url)
    create_all(engine)
    with Session(engine) as s:
        s.add(Role.new("钦灵", profile_prompt="你叫钦灵,是一只猫娘。"))
        s.commit()
    engine.dispose()
    return url


def _onebot_env(db_url: str, redis_url: str, port: int) -> dict[str, str]:
    return gateway_env(
        db_url,
        redis_url,
        NEKOFLOW_ONEBOT_SELF_ID=BOT,
        NEKOFLOW_ONEBOT_ACCESS_TOKEN=TOKEN,
        NEKOFLOW_ONEBOT_WS_PORT=str(port),
        NEKOFLOW_LLM_PROVIDER="scripted",
        NEKOFLOW_DELIVERY_BACKOFF_BASE="0.05",
        NEKOFLOW_DELIVERY_BACKOFF_MAX="0.2",
    )


def _turns(db_url: str, user_id: int) -> list[TurnRun]:
    engine = make_engine(db_url)
    try:
        with Session(engine) as s:
            runs = s.exec(select(TurnRun).where(TurnRun.channel == "qq")).all()
    finally:
        engine.dispose()
    return [r for r in runs if r.request.get("conversation_id") == f"qq:private:{user_id}"]


def _queued(server: PrivateRedis) -> int:
    """Messages waiting in the broker's queues (Redis lists)."""
    client = server.client()
    try:
        return sum(client.llen(k) for k in client.keys("*") if client.type(k) == b"list")
    finally:
        client.close()


@pytest.mark.parametrize(
    ("variable", "url", "shown"),
    [
        ("redis", "redis://:s3cret-pw@127.0.0.1:{port}/0", "redis://:***@127.0.0.1:{port}/0"),
        (
            "database",
            "postgresql://nf:s3cret-pw@127.0.0.1:{port}/nf",
            "postgresql://nf:***@127.0.0.1:{port}/nf",
        ),
    ],
)
def test_refuses_to_start_while_redis_or_the_database_is_unreachable(
    variable: str, url: str, shown: str, redis_url: str, db_file: str, tmp_path: Path
) -> None:
    dead = free_port()  # nothing listens there
    url, shown = url.format(port=dead), shown.format(port=dead)
    env = _onebot_env(db_file, redis_url, free_port())
    env["NEKOFLOW_REDIS_URL" if variable == "redis" else "NEKOFLOW_DATABASE_URL"] = url
    proc = GatewayProc(["onebot"], env, tmp_path / "gateway.log")
    proc.start()
    try:
        wait_until(lambda: proc.proc.poll() is not None, 60, "the gateway to exit", proc.output)
        out = proc.output()
        assert proc.proc.returncode == 2, out
        name = "NEKOFLOW_REDIS_URL" if variable == "redis" else "NEKOFLOW_DATABASE_URL"
        (line,) = [ln for ln in out.splitlines() if ln.strip()]  # one line, no traceback
        assert line.startswith(f"error: {name}={shown}: cannot "), out
        assert "s3cret-pw" not in out and "listening" not in out
    finally:
        proc.kill()


def test_redis_down_stops_accepting_and_the_event_is_stored_when_back(
    private_redis: PrivateRedis, db_file: str, tmp_path: Path
) -> None:
    port = free_port()
    env = _onebot_env(db_file, private_redis.url, port)
    # the README's flow settings: a rate limit is checked in Redis before a turn row is written
    config = tmp_path / "config.ini"
    config.write_text("[conversation_flow]\nrate_limit_user = 10/60\n", encoding="utf-8")
    env["NEKOFLOW_RUNTIME_CONFIG_PATH"] = str(config)
    proc = GatewayProc(["onebot"], env, tmp_path / "g.log")
    proc.start()
    # an Event-role socket: the gateway only learns of the outage from the event it must store
    fake = FakeNapCat(f"ws://127.0.0.1:{port}/onebot/v11/ws", BOT, TOKEN, role="Event")
    try:
        proc.wait_for_output("listening")
        assert fake.wait_connected(30)
        fake.send_event(private_event(7001, "第一句"))
        wait_until(lambda: len(_turns(db_file, 7001)) == 1, 60, "the first turn", proc.output)
        # its chain is in the broker (a Redis list): Redis may go now
        wait_until(lambda: _queued(private_redis) >= 1, 60, "the publish", proc.output)

        private_redis.stop()
        fake.send_event(private_event(7001, "Redis 停了"))
        # the gateway closes the socket and refuses the reconnects (503) while Redis is down
        wait_until(lambda: 503 in fake.refused, 60, "a 503 refusal", proc.output)
        out = proc.output()
        assert "NEKOFLOW_REDIS_URL: cannot reach Redis" in out
        assert len(_turns(db_file, 7001)) == 1
        connects = fake.connects  # refused handshakes while Redis is down do not count

        private_redis.start()  # back, empty
        wait_until(
            lambda: len(_turns(db_file, 7001)) == 2, 60, "the held event stored", proc.output
        )
        wait_until(lambda: fake.connects > connects, 60, "the bot accepted again", proc.output)
        fake.send_event(private_event(7001, "又好了"))
        wait_until(lambda: len(_turns(db_file, 7001)) == 3, 60, "the third turn", proc.output)
        held = [r for r in _turns(db_file, 7001) if "Redis 停了" in str(r.request)]
        assert len(held) == 1  # the event that arrived while Redis was down, stored once
    finally:
        fake.close()
        proc.kill()


def test_redis_down_closes_a_universal_socket_until_it_is_back(
    private_redis: PrivateRedis, db_file: str, tmp_path: Path
) -> None:
    port = free_port()
    env = _onebot_env(db_file, private_redis.url, port)
    proc = GatewayProc(["onebot"], env, tmp_path / "g.log")
    proc.start()
    fake = FakeNapCat(f"ws://127.0.0.1:{port}/onebot/v11/ws", BOT, TOKEN)  # NapCat's default
    try:
        proc.wait_for_output("listening")
        assert fake.wait_connected(30)
        private_redis.stop()
        wait_until(lambda: 503 in fake.refused, 60, "a 503 refusal", proc.output)
        assert "NEKOFLOW_REDIS_URL: cannot reach Redis" in proc.output()
        private_redis.start()
        wait_until(lambda: fake.connects >= 2, 60, "the bot accepted again", proc.output)
        fake.send_event(private_event(7201, "回来了"))
        wait_until(lambda: len(_turns(db_file, 7201)) == 1, 60, "the turn", proc.output)
    finally:
        fake.close()
        proc.kill()


@pytest.mark.parametrize("loss", ["restart", "flushall"])
def test_replies_after_redis_lost_its_data(
    loss: str, private_redis: PrivateRedis, db_file: str, tmp_path: Path
) -> None:
    port = free_port()
    env = _onebot_env(db_file, private_redis.url, port)
    env.update(
        NEKOFLOW_BROKER_URL=private_redis.url,
        NEKOFLOW_RESULT_BACKEND=private_redis.url,
        NEKOFLOW_RUNTIME_CONFIG_PATH=str(tmp_path / "absent-config.ini"),
    )
    workers = Workers(env, tmp_path)
    proc = GatewayProc(["onebot"], env, tmp_path / "gateway.log")
    fake = FakeNapCat(f"ws://127.0.0.1:{port}/onebot/v11/ws", BOT, TOKEN)
    logs = lambda: workers.logs() + proc.output()  # noqa: E731
    try:
        workers.start(concurrency=1, pool="solo")
        proc.start()
        proc.wait_for_output("listening")
        assert fake.wait_connected(30)

        def answered(user: int) -> bool:
            runs = _turns(db_file, user)
            return (
                len(runs) == 1 and runs[0].delivery_status == "sent" and bool(fake.texts(str(user)))
            )

        fake.send_event(private_event(7101, "你好"))
        wait_until(lambda: answered(7101), 120, "the first reply", logs)

        # (no check that Redis is empty afterwards: the worker may already write a result again)
        if loss == "restart":
            private_redis.stop()
            private_redis.start()  # nothing on disk: an empty Redis
        else:
            client = private_redis.client()
            assert client.flushall()
            client.close()

        def send_when_connected() -> bool:
            if not fake.wait_connected(1):
                return False
            fake.send_event(private_event(7102, "数据丢了还在吗"))
            return True

        wait_until(send_when_connected, 60, "the bot connected again", logs)
        wait_until(lambda: answered(7102), 120, "the reply after Redis lost its data", logs)
    finally:
        fake.close()
        proc.kill()
        workers.stop_all()
