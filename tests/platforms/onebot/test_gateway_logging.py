"""``nekoflow gateway onebot`` (a real process) logs at INFO by default — the "bot connected"
line appears — and logs each refused NapCat handshake (wrong token, wrong path, another QQ
number) at WARNING with the reason and the peer address, once per peer and reason while the
implementation keeps retrying."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.platforms.gateway_proc import GatewayProc, free_port, gateway_env, wait_until
from tests.platforms.onebot.conftest import BOT, TOKEN
from tests.platforms.onebot.fake_onebot import FakeNapCat

pytestmark = pytest.mark.slow


@pytest.fixture
def onebot_proc(redis_url: str, redis_client, tmp_path: Path) -> Iterator[tuple[GatewayProc, int]]:
    """The gateway process for bot BOT on a free port (the test Redis, a SQLite file)."""
    port = free_port()
    env = gateway_env(
        f"sqlite:///{tmp_path / 'gw.db'}",
        redis_url,
        NEKOFLOW_ONEBOT_SELF_ID=BOT,
        NEKOFLOW_ONEBOT_ACCESS_TOKEN=TOKEN,
        NEKOFLOW_ONEBOT_WS_PORT=str(port),
    )
    proc = GatewayProc(["onebot"], env, tmp_path / "gateway.log")
    yield proc, port
    proc.kill()


def _lines(text: str, *needles: str) -> list[str]:
    return [line for line in text.splitlines() if all(n in line for n in needles)]


def test_connected_at_info_and_refusals_at_warning_once(onebot_proc) -> None:
    proc, port = onebot_proc
    proc.start()
    proc.wait_for_output("listening")
    base = f"ws://127.0.0.1:{port}"
    good = FakeNapCat(f"{base}/onebot/v11/ws", BOT, TOKEN)
    wrong_token = FakeNapCat(f"{base}/onebot/v11/ws", BOT, "not-the-token")
    wrong_path = FakeNapCat(f"{base}/ws", BOT, TOKEN)
    other_qq = FakeNapCat(f"{base}/onebot/v11/ws", "1122334455", TOKEN)
    fakes = [good, wrong_token, wrong_path, other_qq]
    try:
        proc.wait_for_output(f"onebot bot {BOT} connected")
        # each refused bot retries every 0.2 s: let each be refused several times
        wait_until(
            lambda: all(len(f.refused) >= 4 for f in fakes[1:]),
            30,
            "repeated refusals",
            proc.output,
        )
        out = proc.output()
        assert _lines(out, "INFO", f"onebot bot {BOT} connected (universal)")
        token_lines = _lines(out, "WARNING", "refused (403)", "wrong access token")
        path_lines = _lines(out, "WARNING", "refused (404)", "wrong path '/ws'")
        qq_lines = _lines(out, "WARNING", "refused (403)", "unknown X-Self-ID '1122334455'")
        for lines in (token_lines, path_lines, qq_lines):
            assert len(lines) == 1, out  # rate-limited: not one line per retry
            assert "handshake from 127.0.0.1:" in lines[0]
        assert "not-the-token" not in out and TOKEN not in out
    finally:
        for f in fakes:
            f.close()


def test_log_level_flag_quiets_info(onebot_proc) -> None:
    proc, port = onebot_proc
    proc.args = ["onebot", "--log-level", "WARNING"]
    proc.start()
    proc.wait_for_output("listening")
    good = FakeNapCat(f"ws://127.0.0.1:{port}/onebot/v11/ws", BOT, TOKEN)
    wrong = FakeNapCat(f"ws://127.0.0.1:{port}/onebot/v11/ws", BOT, "nope")
    try:
        assert good.wait_connected()
        wait_until(lambda: len(wrong.refused) >= 2, 30, "a refusal", proc.output)
        proc.wait_for_output("wrong access token")
        assert "connected (universal)" not in proc.output()
    finally:
        good.close()
        wrong.close()


def test_doctor_names_why_a_bot_is_not_connected(onebot_proc, redis_client) -> None:
    """A NapCat turned away for its token: doctor's OneBot line says so (it said only "not
    connected", the same for a wrong token, a wrong path or another QQ number)."""
    from nekoflow.doctor.platforms import onebot
    from nekoflow.platforms.onebot.settings import OneBotBot, OneBotSettings
    from nekoflow.settings import Settings

    proc, port = onebot_proc
    proc.start()
    proc.wait_for_output("listening")
    wrong = FakeNapCat(f"ws://127.0.0.1:{port}/onebot/v11/ws", BOT, "not-the-token")
    try:
        wait_until(lambda: len(wrong.refused) >= 1, 30, "a refusal", proc.output)
        proc.wait_for_output("wrong access token")
        bots = OneBotSettings(bots=[OneBotBot(self_id=BOT, access_token=TOKEN)])
        settings = Settings(redis_prefix="nfgw")  # the gateway process's (gateway_env)
        wait_until(
            lambda: "wrong access token" in onebot(settings, redis_client, bots)[0].detail,
            10,
            "the refusal in doctor's line",
            proc.output,
        )
        (check,) = onebot(settings, redis_client, bots)
        assert not check.ok and "from 127.0.0.1" in check.detail, check
        assert "not-the-token" not in check.detail and TOKEN not in check.detail
    finally:
        wrong.close()
