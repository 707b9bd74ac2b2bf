"""OneBot rules (pure) and settings, and the HTTP API sender against the loopback HTTP API:
signatures, bearer tokens, roles, send_msg params, retcode/HTTP status classification."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from pydantic import ValidationError

from nekoflow.delivery.base import Chunk, Destination, PermanentFailure, RetryLater, Unconfirmed
from nekoflow.platforms.onebot.protocol import (
    bearer,
    client_role,
    is_meta,
    is_response,
    judge,
    send_msg,
    sign,
    signature_matches,
    token_matches,
)
from nekoflow.platforms.onebot.sender import HttpSender, make_sender
from nekoflow.platforms.onebot.settings import OneBotSettings
from tests.platforms.onebot.fake_onebot import FakeHttpApi

PRIVATE = Destination(platform="onebot", bot="1", chat_type="private", chat_id="42")
GROUP = Destination(platform="onebot", bot="1", chat_type="group", chat_id="777", reply_to="9")


def _text(i: int, text: str) -> Chunk:
    return Chunk(index=i, payload={"type": "text", "content": text})


def test_signature_is_hmac_sha1_of_the_raw_body() -> None:
    body = b'{"post_type":"message"}'
    # HMAC-SHA1("secret", body), computed once outside the code under test
    assert sign(body, "secret") == "sha1=337a43569f539f97888127f17fefc625794e5e06"
    good = sign(body, "secret")
    assert signature_matches(body, good, "secret")
    assert not signature_matches(body + b" ", good, "secret")
    assert not signature_matches(body, good, "other")
    assert not signature_matches(body, None, "secret")
    assert not signature_matches(body, good[5:], "secret")  # without "sha1="


def test_tokens_and_roles() -> None:
    assert bearer("Bearer abc") == "abc" and bearer("Token abc") == "abc"
    assert bearer("Basic abc") is None and bearer("Bearer ") is None and bearer(None) is None
    assert token_matches("abc", "abc") and not token_matches("abd", "abc")
    assert not token_matches(None, "abc") and token_matches(None, None)
    assert client_role("Universal") == "universal" and client_role(None) == "universal"
    assert client_role("API") == "api" and client_role("bogus") is None


def test_frame_kinds() -> None:
    assert is_response({"status": "ok", "retcode": 0, "echo": "x"})
    assert not is_response({"post_type": "message", "message": []})
    assert is_meta({"post_type": "meta_event", "meta_event_type": "heartbeat"})


def test_send_msg_params() -> None:
    assert send_msg(PRIVATE, _text(0, "喵")) == {
        "message": [{"type": "text", "data": {"text": "喵"}}],
        "message_type": "private",
        "user_id": 42,
    }
    first = send_msg(GROUP, _text(0, "a"))
    assert first["message"][0] == {"type": "reply", "data": {"id": "9"}}
    assert first["group_id"] == 777 and first["message_type"] == "group"
    assert send_msg(GROUP, _text(1, "b"))["message"] == [{"type": "text", "data": {"text": "b"}}]
    image = Chunk(index=1, kind="image", payload={"type": "image", "url": "https://x/a.png"})
    assert send_msg(PRIVATE, image)["message"] == [
        {"type": "image", "data": {"file": "https://x/a.png"}}
    ]
    with pytest.raises(PermanentFailure):
        send_msg(PRIVATE, Chunk(index=0, kind="sticker", payload={}))
    with pytest.raises(PermanentFailure):
        send_msg(PRIVATE, _text(0, "  "))


@pytest.mark.parametrize(
    ("response", "kind", "message_id"),
    [
        ({"status": "ok", "retcode": 0, "data": {"message_id": 12}}, "sent", "12"),
        ({"status": "async", "retcode": 1, "data": None}, "sent", None),
        ({"status": "failed", "retcode": 1404}, "failed", None),
        ({"status": "failed", "retcode": 1401}, "failed", None),
        ({"status": "failed", "retcode": 100}, "failed", None),
        ({"status": "failed", "retcode": 200}, "failed", None),
        # implementation-defined (NapCat/Lagrange: -1, 1200 on a send that timed out inside the
        # client): maybe sent, never resent blindly
        ({"status": "failed", "retcode": 1500}, "unconfirmed", None),
        ({"status": "failed", "retcode": 1200}, "unconfirmed", None),
        ({"status": "failed", "retcode": -1}, "unconfirmed", None),
        ({"status": "failed"}, "retry", None),
    ],
)
def test_judge(response: dict, kind: str, message_id: str | None) -> None:
    verdict = judge(response)
    assert (verdict.kind, verdict.message_id) == (kind, message_id)


def test_settings_shorthand_several_bots_and_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEKOFLOW_ONEBOT_SELF_ID", "111")
    monkeypatch.setenv("NEKOFLOW_ONEBOT_ACCESS_TOKEN", "Zq9tok")
    monkeypatch.setenv(
        "NEKOFLOW_ONEBOT_BOTS",
        '[{"self_id": 222, "mode": "http", "http_api_url": "http://127.0.0.1:3000/",'
        ' "secret": "s"}]',
    )
    settings = OneBotSettings()
    assert [b.self_id for b in settings.bots] == ["111", "222"]
    assert settings.bot(None).self_id == "111" and settings.bot("333") is None
    http = settings.bot("222")
    assert http.http_api_url == "http://127.0.0.1:3000"
    assert http.access_token.get_secret_value() == "Zq9tok"  # top-level fallback
    assert http.http_api_token.get_secret_value() == "Zq9tok"
    assert "Zq9tok" not in repr(settings) and "Zq9tok" not in str(settings.model_dump())


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ({"NEKOFLOW_ONEBOT_BOTS": '[{"self_id": "abc"}]'}, "self_id"),
        ({"NEKOFLOW_ONEBOT_BOTS": '[{"self_id": 1, "mode": "http"}]'}, "http_api_url"),
        ({"NEKOFLOW_ONEBOT_BOTS": '[{"self_id": 1}, {"self_id": 1}]'}, "duplicate"),
        ({"NEKOFLOW_ONEBOT_WS_PATH": "no-slash"}, "ws_path"),
        ({"NEKOFLOW_ONEBOT_HTTP_API_URL": "ftp://x"}, "http_api_url"),
    ],
)
def test_bad_settings_name_the_field(
    env: dict[str, str], field: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ValidationError) as err:
        OneBotSettings()
    assert field in str(err.value)


@pytest.fixture
def api() -> Iterator[FakeHttpApi]:
    fake = FakeHttpApi("api-token")
    yield fake
    fake.close()


def _sender(api: FakeHttpApi, token: str = "api-token") -> HttpSender:
    return HttpSender(httpx.Client(timeout=5), api.url, token)


def test_http_sender_sends_and_classifies(api: FakeHttpApi) -> None:
    sender = _sender(api)
    result = sender.send(GROUP, _text(0, "你好"), key="t:0")
    assert result.platform_message_id and not result.handed_over
    assert api.calls[0]["params"]["group_id"] == 777
    api.script = [(500, 0), (429, 0), (200, 1200), (200, 1404), (403, 0)]
    for _ in range(2):
        with pytest.raises(RetryLater) as err:
            sender.send(GROUP, _text(1, "x"), key="t:1")
        assert not isinstance(err.value, Unconfirmed)  # HTTP 5xx/429: not processed, retried
    with pytest.raises(Unconfirmed, match="retcode 1200"):  # answered, maybe sent
        sender.send(GROUP, _text(1, "x"), key="t:1")
    with pytest.raises(PermanentFailure, match="retcode 1404"):
        sender.send(GROUP, _text(1, "x"), key="t:1")
    with pytest.raises(PermanentFailure, match="HTTP 403"):
        sender.send(GROUP, _text(1, "x"), key="t:1")
    with pytest.raises(PermanentFailure, match="HTTP 401"):
        _sender(api, "wrong").send(GROUP, _text(1, "x"), key="t:1")


def test_http_sender_timeouts_and_refused_connections_are_temporary() -> None:
    sender = HttpSender(httpx.Client(timeout=1), "http://127.0.0.1:9", "t")
    with pytest.raises(RetryLater) as err:
        sender.send(PRIVATE, _text(0, "x"), key="t:0")
    assert "x" not in err.value.reason.replace("onebot", "")


def test_http_sender_read_timeout_is_unconfirmed() -> None:
    """send_msg reached the implementation but the answer timed out: maybe sent (Unconfirmed,
    so the non-idempotent HTTP sender is not resent); a refused connection is a plain retry."""
    calls: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        raise httpx.ReadTimeout("late", request=request)

    sender = HttpSender(httpx.Client(transport=httpx.MockTransport(handle)), "http://ob", "t")
    assert sender.idempotent is False
    with pytest.raises(Unconfirmed, match="ReadTimeout") as err:
        sender.send(GROUP, _text(0, "喵"), key="t:0")
    assert "喵" not in err.value.reason and calls == ["/send_msg"]
    refused = HttpSender(httpx.Client(timeout=1), "http://127.0.0.1:9", "t")
    with pytest.raises(RetryLater) as err:
        refused.send(GROUP, _text(0, "喵"), key="t:0")
    assert not isinstance(err.value, Unconfirmed) and "ConnectError" in err.value.reason


def test_make_sender_picks_the_mode(api: FakeHttpApi) -> None:
    settings = OneBotSettings(
        bots=[
            {
                "self_id": "5",
                "mode": "http",
                "http_api_url": api.url,
                "http_api_token": "k",
                "allow_unsigned": True,
            }
        ]
    )
    sender = make_sender(settings.bot("5"), settings, None)
    assert isinstance(sender, HttpSender) and sender.headers == {"Authorization": "Bearer k"}
