"""QQ bot pure rules and crypto: the docs' Ed25519 vector, verification failures, the
passive-reply window and count, ``msg_seq`` per chunk, endpoints, error classes (a read timeout
is unconfirmed, a refused connection or token fetch a plain retry); and the shared
token cache against real Redis (one fetch across threads, refresh after a refusal)."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
import redis

from nekoflow.channels.context import ChatRequest
from nekoflow.delivery.base import Chunk, Destination, PermanentFailure, RetryLater, Unconfirmed
from nekoflow.platforms.qqbot.client import (
    DuplicateSend,
    QQBotClient,
    QQBotError,
    classify,
    fetch_access_token,
)
from nekoflow.platforms.qqbot.crypto import seed_from_secret, sign, validation_answer, verify
from nekoflow.platforms.qqbot.rules import (
    check_passive_reply,
    message_body,
    message_path,
    message_time,
    qqbot_destination,
)
from nekoflow.platforms.qqbot.sender import QQBotSender
from nekoflow.platforms.tokens import LocalTokenCache, RedisTokenCache, cache_seconds

DOC_SIGNATURE = (
    "87befc99c42c651b3aac0278e71ada338433ae26fcb24307bdc5ad38c1adc2d0"
    "1bcfcadc0842edac85e85205028a1132afe09280305f13aa6909ffc2d652c706"
)


def test_validation_answer_matches_the_docs_example() -> None:
    answer = validation_answer("DG5g3B4j9X2KOErG", "Arq0D5A61EgUu4OxUvOp", "1725442341")
    assert answer == {"plain_token": "Arq0D5A61EgUu4OxUvOp", "signature": DOC_SIGNATURE}


def test_seed_repeats_the_secret_to_32_bytes() -> None:
    assert seed_from_secret("naOC0ocQE3shWLAfffVLB1rhYPG7") == b"naOC0ocQE3shWLAfffVLB1rhYPG7naOC"
    assert len(seed_from_secret("a")) == 32
    with pytest.raises(ValueError):
        seed_from_secret("")


def test_verify_accepts_only_the_right_signature() -> None:
    body = b'{"op":0,"d":{},"t":"C2C_MESSAGE_CREATE"}'
    good = sign("secret-1", b"1725442341" + body)
    assert verify("secret-1", good, "1725442341", body)
    assert not verify("secret-2", good, "1725442341", body)  # another bot's key
    assert not verify("secret-1", good, "1725442342", body)  # another timestamp
    assert not verify("secret-1", good, "1725442341", body + b" ")  # body changed
    assert not verify("secret-1", None, "1725442341", body)
    assert not verify("secret-1", good, None, body)
    assert not verify("secret-1", "zz" * 64, "1725442341", body)
    assert not verify("secret-1", good[:-2], "1725442341", body)


def _dest(**kw) -> Destination:
    base = {"platform": "qqbot", "chat_type": "c2c", "chat_id": "U1", "reply_to": "m1"}
    return Destination(**(base | kw))


def test_passive_reply_window_and_count() -> None:
    now = time.time()
    fresh = _dest(extra={"msg_ts": str(now - 10)})
    check_passive_reply(fresh, 0, now, window=300, max_replies=5)
    check_passive_reply(fresh, 4, now, window=300, max_replies=5)
    with pytest.raises(PermanentFailure, match="at most 5 replies"):
        check_passive_reply(fresh, 5, now, window=300, max_replies=5)
    old = _dest(extra={"msg_ts": "2025-02-15T16:32:42+08:00"})
    with pytest.raises(PermanentFailure, match="window of 300s has passed"):
        check_passive_reply(old, 0, now, window=300, max_replies=5)
    active = _dest(reply_to=None, extra={"msg_ts": "1"})  # no msg_id: not a passive reply
    check_passive_reply(active, 9, now, window=300, max_replies=5)
    assert message_time("2025-02-15T16:32:42+08:00") == 1739608362.0
    assert message_time("1741878278") == 1741878278.0
    assert message_time("yesterday") is None


def test_msg_seq_is_the_chunk_index_plus_one_and_paths() -> None:
    group = _dest(chat_type="group", chat_id="G1")
    assert message_body(group, 0, "喵") == {
        "content": "喵",
        "msg_type": 0,
        "msg_seq": 1,
        "msg_id": "m1",
    }
    assert message_body(group, 2, "喵")["msg_seq"] == 3
    channel = _dest(platform="qqbot-guild", chat_type="channel", chat_id="C1")
    assert message_body(channel, 0, "喵") == {"content": "喵", "msg_id": "m1"}
    assert message_path(_dest()) == "/v2/users/U1/messages"
    assert message_path(group) == "/v2/groups/G1/messages"
    assert message_path(channel) == "/channels/C1/messages"
    assert message_path(_dest(chat_type="dm", chat_id="GD")) == "/dms/GD/messages"


def test_destinations_of_each_chat_kind() -> None:
    def req(**kw) -> ChatRequest:
        base = {"channel": "qqbot", "conversation_id": "x", "user_id": "u", "content": "hi"}
        return ChatRequest(**(base | kw))

    c2c = req(
        message_id="m",
        scene="private",
        metadata={
            "qqbot_event_type": "C2C_MESSAGE_CREATE",
            "qqbot_user_openid": "U",
            "timestamp": "5",
        },
    )
    assert qqbot_destination(c2c, "neko") == Destination(
        platform="qqbot",
        bot="neko",
        chat_type="c2c",
        chat_id="U",
        reply_to="m",
        extra={"msg_ts": "5"},
    )
    grp = req(message_id="m", scene="group", group_id="G", metadata={"qqbot_group_openid": "G"})
    assert (qqbot_destination(grp, None).chat_type, qqbot_destination(grp, None).chat_id) == (
        "group",
        "G",
    )
    dm = req(scene="private", metadata={"event_type": "DIRECT_MESSAGE_CREATE", "guild_id": "GD"})
    assert qqbot_destination(dm, None).platform == "qqbot-guild"
    assert qqbot_destination(dm, None).chat_type == "dm"
    ch = req(scene="group", group_id="C", metadata={"event_type": "AT_MESSAGE_CREATE"})
    assert (qqbot_destination(ch, None).chat_type, qqbot_destination(ch, None).chat_id) == (
        "channel",
        "C",
    )


def test_error_classes() -> None:
    assert isinstance(
        classify("v2", 400, {"code": 40054005, "message": "去重"}, None), DuplicateSend
    )
    limited = classify("v2", 429, {"code": 22009}, "2")
    assert isinstance(limited, RetryLater) and limited.retry_after == 2.0
    assert isinstance(classify("v2", 502, None, None), RetryLater)
    perm = classify("v2", 400, {"code": 40034028, "message": "secret words"}, None)
    assert isinstance(perm, QQBotError) and "window" in perm.reason
    assert "secret words" not in perm.reason  # never the platform's free text


def test_cache_seconds() -> None:
    assert cache_seconds(7200, 60) == 7140
    assert cache_seconds(10, 60) == 1.0


def test_redis_token_cache_fetches_once_across_threads(redis_client: redis.Redis) -> None:
    fetched: list[int] = []
    gate = threading.Event()

    def fetch() -> tuple[str, float]:
        gate.wait(1.0)  # slow token endpoint: every thread asks meanwhile
        fetched.append(1)
        return f"token-{len(fetched)}", 7200

    key = "nekoflow-test:token:qqbot:once"
    redis_client.delete(key)
    caches = [RedisTokenCache(redis_client, key, fetch) for _ in range(8)]
    got: list[str] = []
    threads = [threading.Thread(target=lambda c=c: got.append(c.get())) for c in caches]
    for t in threads:
        t.start()
    time.sleep(0.2)
    gate.set()
    for t in threads:
        t.join(10)
    assert got == ["token-1"] * 8 and len(fetched) == 1
    assert 7000 < redis_client.pttl(key) / 1000 <= 7140
    caches[0].invalidate("token-0")  # a stale refusal of an older token changes nothing
    assert caches[1].get() == "token-1"
    caches[0].invalidate("token-1")
    assert caches[1].get() == "token-2" and len(fetched) == 2
    redis_client.delete(key)


def _mock_client(calls: list[str], error: type[httpx.TransportError]) -> QQBotClient:
    """A client whose message calls reach the platform's log, then fail with ``error``."""

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        raise error("no answer", request=request)

    return QQBotClient(
        LocalTokenCache(lambda: ("tok-1", 7200.0)),
        base_url="https://qq.example",
        transport=httpx.MockTransport(handle),
    )


def test_read_timeout_is_unconfirmed_and_connect_error_a_plain_retry() -> None:
    """A read timeout may follow a delivered message: Unconfirmed (the guild/DM sender is not
    idempotent, so the deliver stage records it unknown; group/C2C resend by msg_seq)."""
    calls: list[str] = []
    now = str(time.time())
    guild = QQBotSender(_mock_client(calls, httpx.ReadTimeout), idempotent=False)
    channel = _dest(
        platform="qqbot-guild", chat_type="channel", chat_id="C1", extra={"msg_ts": now}
    )
    with pytest.raises(Unconfirmed, match="ReadTimeout") as err:
        guild.send(channel, Chunk(index=0, payload={"content": "喵"}), key="t:0")
    assert "喵" not in err.value.reason and "tok-1" not in err.value.reason
    assert calls == ["/channels/C1/messages"]
    refused = QQBotSender(_mock_client(calls, httpx.ConnectError), idempotent=False)
    with pytest.raises(RetryLater) as err:
        refused.send(channel, Chunk(index=0, payload={"content": "喵"}), key="t:0")
    assert not isinstance(err.value, Unconfirmed)
    assert QQBotSender(_mock_client([], httpx.ReadTimeout)).idempotent  # group/C2C default


def test_token_fetch_timeout_is_a_plain_retry() -> None:
    """The token request precedes the message: any error there means nothing was sent."""

    def handle(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    http = httpx.Client(transport=httpx.MockTransport(handle))
    with pytest.raises(RetryLater) as err:
        fetch_access_token(http, "https://qq.example/token", "app", "secret")
    assert not isinstance(err.value, Unconfirmed)
