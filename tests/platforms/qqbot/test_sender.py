"""QQ bot sender against the loopback fake OpenAPI: the passive-reply window per chat type
(C2C 60 min, group 5 min) and how the platform's answers become outcomes (error codes on 2xx,
frequency-limit codes retried)."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import pytest
from pydantic import ValidationError

from nekoflow.channels.context import ChatRequest
from nekoflow.delivery.base import Chunk, Destination, PermanentFailure, RetryLater
from nekoflow.delivery.registry import sender_for
from nekoflow.platforms.qqbot.client import (
    RATE_CODES,
    QQBotClient,
    QQBotError,
    classify,
    fetch_access_token,
)
from nekoflow.platforms.qqbot.rules import qqbot_destination, reply_window
from nekoflow.platforms.qqbot.sender import QQBotSender, make_qqbot_sender
from nekoflow.platforms.qqbot.settings import QQBotSettings
from nekoflow.platforms.tokens import LocalTokenCache
from tests.platforms.qqbot.conftest import APP_ID, SECRET, reset_caches
from tests.platforms.qqbot.fake_qq import FakeQQ

NOW = 1_750_000_000.0


@pytest.fixture
def client(fake_qq: FakeQQ) -> Iterator[QQBotClient]:
    """A real client of the fake, with an in-process token cache."""
    http = httpx.Client(timeout=5)
    tokens = LocalTokenCache(lambda: fetch_access_token(http, fake_qq.token_url, APP_ID, SECRET))
    qq = QQBotClient(tokens, base_url=fake_qq.url, timeout=5)
    yield qq
    qq.close()
    http.close()


def _dest(chat_type: str, chat_id: str, age: float) -> Destination:
    return Destination(
        platform="qqbot",
        bot="neko",
        chat_type=chat_type,
        chat_id=chat_id,
        reply_to="m1",
        extra={"msg_ts": str(NOW - age)},
    )


def _chunk(index: int = 0, text: str = "喵") -> Chunk:
    return Chunk(index=index, kind="text", payload={"content": text})


def test_window_settings_default_per_chat_type_and_are_validated() -> None:
    qq = QQBotSettings()
    assert (qq.reply_window_seconds, qq.c2c_reply_window_seconds) == (300.0, 3600.0)
    for bad in ({"c2c_reply_window_seconds": 0}, {"reply_window_seconds": -1}):
        with pytest.raises(ValidationError):
            QQBotSettings(**bad)
    with pytest.raises(ValidationError):
        QQBotSettings(c2c_reply_window_seconds=float("inf"))
    assert reply_window(_dest("c2c", "U", 0), window=300, c2c_window=3600) == 3600
    for kind in ("group", "channel", "dm"):
        assert reply_window(_dest(kind, "X", 0), window=300, c2c_window=3600) == 300


def test_window_env_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEKOFLOW_QQBOT_REPLY_WINDOW_SECONDS", "120")
    monkeypatch.setenv("NEKOFLOW_QQBOT_C2C_REPLY_WINDOW_SECONDS", "1800")
    qq = QQBotSettings()
    assert (qq.reply_window_seconds, qq.c2c_reply_window_seconds) == (120.0, 1800.0)


def test_c2c_reply_ten_minutes_late_is_sent_a_group_one_is_refused(
    client: QQBotClient, fake_qq: FakeQQ
) -> None:
    sender = QQBotSender(client, clock=lambda: NOW)
    result = sender.send(_dest("c2c", "U1", 600), _chunk(), key="k")
    assert result.platform_message_id is not None
    assert fake_qq.texts("U1") == ["喵"]
    with pytest.raises(PermanentFailure, match="window of 300s has passed"):
        sender.send(_dest("group", "G1", 600), _chunk(), key="k")
    assert fake_qq.calls("/v2/groups/G1") == []  # refused before any request
    with pytest.raises(PermanentFailure, match="window of 3600s has passed"):
        sender.send(_dest("c2c", "U2", 3601), _chunk(), key="k")
    assert fake_qq.calls("/v2/users/U2") == []


def test_sender_factory_reads_both_windows(qq_env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEKOFLOW_QQBOT_C2C_REPLY_WINDOW_SECONDS", "1800")
    reset_caches()
    sender = make_qqbot_sender("neko", SimpleNamespace(redis_url=None))
    try:
        assert (sender.window, sender.c2c_window) == (300.0, 1800.0)
    finally:
        sender.client.close()


def test_a_2xx_with_an_error_code_is_that_error(client: QQBotClient, fake_qq: FakeQQ) -> None:
    sender = QQBotSender(client, clock=lambda: NOW)
    dest = _dest("c2c", "U5", 0)
    fake_qq.fail_next("U5", 200, 304082)
    with pytest.raises(QQBotError) as err:
        sender.send(dest, _chunk(), key="k")
    assert err.value.code == 304082 and fake_qq.texts("U5") == []
    fake_qq.fail_next("U5", 200, 11244)  # token refused: dropped, fetched again, retried
    with pytest.raises(RetryLater, match="access token refused"):
        sender.send(dest, _chunk(), key="k")
    sender.send(dest, _chunk(), key="k")
    assert fake_qq.state.issued == 2 and fake_qq.texts("U5") == ["喵"]
    fake_qq.fail_next("U5", 200, 40054005)  # same as on 400: already delivered
    assert sender.send(dest, _chunk(1), key="k").platform_message_id is None
    fake_qq.fail_next("U5", 202, 304024)  # held for review: accepted
    assert sender.send(dest, _chunk(2), key="k").platform_message_id is None
    fake_qq.fail_next("U5", 200, 0)  # code 0 means success (this body has no id)
    assert sender.send(dest, _chunk(3), key="k").platform_message_id is None
    ok = sender.send(dest, _chunk(4, "汪"), key="k")
    assert ok.platform_message_id is not None and fake_qq.texts("U5") == ["喵", "汪"]


@pytest.mark.parametrize("code", sorted(RATE_CODES))
def test_frequency_codes_are_retried_later(code: int) -> None:
    for status in (400, 200, 429):
        err = classify("v2", status, {"code": code, "message": "msg limit exceed"}, None)
        assert isinstance(err, RetryLater) and err.retry_after is None  # delivery backoff
    waited = classify("v2", 400, {"code": code}, "3")
    assert isinstance(waited, RetryLater) and waited.retry_after == 3.0


def test_other_4xx_stay_permanent() -> None:
    for code in (304045, 304049, 304050, 40034028, 11255, 50006):  # quotas, window, bad request
        err = classify("v2", 400, {"code": code}, None)
        assert isinstance(err, QQBotError) and err.code == code


def test_a_rate_limited_send_is_retried_then_sent(client: QQBotClient, fake_qq: FakeQQ) -> None:
    sender = QQBotSender(client, clock=lambda: NOW)
    dest = _dest("group", "G7", 0)
    fake_qq.fail_next("G7", 400, 22009)
    fake_qq.fail_next("G7", 200, 22009)
    for _ in range(2):
        with pytest.raises(RetryLater, match="error 22009 \\(message rate limit\\)"):
            sender.send(dest, _chunk(), key="k")
    sender.send(dest, _chunk(), key="k")
    assert fake_qq.texts("G7") == ["喵"]


@pytest.mark.parametrize("scene", ["private", "group"])
def test_only_passive_replies_are_idempotent(qq_env, scene: str) -> None:
    """msg_seq dedupes only with msg_id: an active message (none to quote) goes to a
    non-idempotent sender, so a send a dead worker left in flight is not sent again."""
    base = {"channel": "qqbot", "conversation_id": "x", "user_id": "U", "content": "hi"}
    meta = {"qqbot_user_openid": "U", "qqbot_group_openid": "G"}
    settings = SimpleNamespace(redis_url=None)
    kinds = {}
    for message_id in ("m1", ""):
        req = ChatRequest(**base, scene=scene, group_id="G", message_id=message_id, metadata=meta)
        dest = qqbot_destination(req, "neko")
        sender = sender_for(dest.platform, dest.bot, settings)
        kinds[message_id] = (dest.platform, dest.chat_type, sender.idempotent)
    chat_type = "c2c" if scene == "private" else "group"
    assert kinds == {
        "m1": ("qqbot", chat_type, True),
        "": ("qqbot-active", chat_type, False),
    }


def test_the_fake_dedupes_msg_seq_only_with_msg_id(client: QQBotClient, fake_qq: FakeQQ) -> None:
    sender = QQBotSender(client, idempotent=False)
    active = Destination(platform="qqbot-active", chat_type="c2c", chat_id="U3")
    for _ in range(2):  # a resend of an active message is a second message on QQ
        sender.send(active, _chunk(), key="t:0")
    sent = fake_qq.sent("U3")
    assert len(sent) == 2 and all("msg_id" not in body for body in sent)
