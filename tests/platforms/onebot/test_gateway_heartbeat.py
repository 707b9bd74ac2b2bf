"""The gateway keeps a heartbeat key in Redis while a bot's socket is open; ``nekoflow doctor``
reads it to say whether each OneBot account is connected."""

from __future__ import annotations

import time

import redis

from nekoflow.doctor.platforms import onebot
from nekoflow.platforms.onebot.gateway import heartbeat_key
from nekoflow.settings import Settings
from tests.platforms.onebot.conftest import BOT, BOT2, PREFIX, TOKEN, ob_settings
from tests.platforms.onebot.fake_onebot import FakeNapCat


def _wait(predicate, what: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_doctor_sees_connected_bots_through_the_heartbeat(
    make_gateway, redis_client: redis.Redis
) -> None:
    settings = Settings(redis_prefix=PREFIX)
    gw = make_gateway()
    napcat = FakeNapCat(gw.url, BOT, TOKEN)
    try:
        assert napcat.wait_connected()
        _wait(lambda: redis_client.exists(heartbeat_key(PREFIX, BOT)), "the heartbeat key")
        assert 0 < redis_client.ttl(heartbeat_key(PREFIX, BOT)) <= 30
        lines = {c.name: c for c in onebot(settings, redis_client, ob_settings())}
        assert lines[f"onebot {BOT}"].ok
        second = lines[f"onebot {BOT2}"]  # configured, never connected
        assert not second.ok and "not connected" in second.detail
        assert "nekoflow gateway onebot" in second.fix and BOT2 in second.fix
    finally:
        napcat.close()
    _wait(lambda: not redis_client.exists(heartbeat_key(PREFIX, BOT)), "the key's removal")
    check = next(c for c in onebot(settings, redis_client, ob_settings()) if BOT in c.name)
    assert not check.ok
