"""Pure delivery decisions: what a row's status means, backoff and retry_after, chunk keys,
registry lookups, Telegram's error classification (codes, never the description), and which
httpx errors mean "not sent" (retry) or "maybe sent" (unconfirmed)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from nekoflow.delivery.base import Destination, PermanentFailure, RetryLater, Unconfirmed
from nekoflow.delivery.decide import give_up, retry_delay, step_for_row, step_when_unconfirmed
from nekoflow.delivery.outbox import chunk_key, parse_key
from nekoflow.delivery.registry import destination_for, rate_limits_for
from nekoflow.platforms.telegram.client import classify
from nekoflow.platforms.transport import request_failure

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("status", "lease", "idempotent", "resend", "kind"),
    [
        ("pending", None, False, False, "send"),
        ("sent", None, False, False, "skip"),
        ("failed", None, False, False, "skip"),
        ("unknown", None, False, False, "skip"),
        ("handed_over", None, False, False, "skip"),
        ("sending", NOW + timedelta(seconds=5), False, False, "wait"),
        ("sending", NOW - timedelta(seconds=1), False, False, "unknown"),
        ("sending", NOW - timedelta(seconds=1), True, False, "send"),
        ("sending", NOW - timedelta(seconds=1), False, True, "send"),
    ],
)
def test_step_for_row(status, lease, idempotent, resend, kind) -> None:
    step = step_for_row(status, lease, NOW, idempotent=idempotent, resend_unconfirmed=resend)
    assert step.kind == kind
    if kind == "wait":
        assert step.delay == 5.0


@pytest.mark.parametrize(
    ("status", "not_before", "kind", "delay"),
    [
        ("pending", NOW + timedelta(seconds=30), "wait", 30.0),
        ("pending", NOW, "send", 0.0),
        ("pending", NOW - timedelta(seconds=1), "send", 0.0),
        ("sent", NOW + timedelta(seconds=30), "skip", 0.0),
    ],
)
def test_pending_row_waits_for_its_not_before(status, not_before, kind, delay) -> None:
    step = step_for_row(
        status, None, NOW, idempotent=False, resend_unconfirmed=False, not_before=not_before
    )
    assert (step.kind, step.delay) == (kind, delay)


def test_retry_delay_honours_retry_after_and_caps_backoff() -> None:
    rng = random.Random(1)
    assert retry_delay(1, retry_after=7, base=1, cap=60, rng=rng) == 7.0
    assert retry_delay(3, retry_after=0, base=1, cap=60, rng=rng) == 0.0
    delays = [retry_delay(n, retry_after=None, base=1, cap=8, rng=rng) for n in range(1, 10)]
    assert all(0 < d <= 8 for d in delays)
    assert 0.5 <= delays[0] <= 1 and delays[-1] >= 4
    assert give_up(3, 3) and not give_up(2, 3)


def test_chunk_keys_round_trip() -> None:
    assert parse_key(chunk_key("abc", 3)) == ("abc", 3)
    for bad in ("abc", ":1", "abc:x", "abc:-1"):
        with pytest.raises(ValueError):
            parse_key(bad)


@pytest.mark.parametrize(
    ("status", "body", "kind", "words"),
    [
        (
            429,
            {
                "error_code": 429,
                "description": "Too Many Requests: retry after 5",
                "parameters": {"retry_after": 5},
            },
            RetryLater,
            "error 429",
        ),
        (
            403,
            {"error_code": 403, "description": "Forbidden: bot was blocked by the user"},
            PermanentFailure,
            "bot blocked by the user",
        ),
        (
            400,
            {"error_code": 400, "description": "Bad Request: chat not found"},
            PermanentFailure,
            "chat not found",
        ),
        (
            401,
            {"error_code": 401, "description": "Unauthorized"},
            PermanentFailure,
            "bad bot token",
        ),
        (502, None, RetryLater, "error 502"),
        (
            400,
            {"error_code": 400, "description": "Bad Request: can't parse 秘密 text"},
            PermanentFailure,
            "error 400",
        ),
    ],
)
def test_telegram_errors_are_classified_by_code(status, body, kind, words) -> None:
    exc = classify("sendMessage", status, body)
    assert isinstance(exc, kind)
    assert words in exc.reason
    assert "秘密" not in exc.reason and "Forbidden" not in exc.reason
    if status == 429:
        assert exc.retry_after == 5.0


def test_registry_knows_telegram_and_not_web() -> None:
    from nekoflow.channels.context import ChatRequest

    req = ChatRequest(
        channel="telegram",
        conversation_id="-1001",
        message_id="42",
        thread_id="7",
        metadata={"telegram_chat_id": "-1001", "telegram_chat_type": "supergroup"},
    )
    dest = destination_for("telegram", req, "neko")
    assert dest == Destination(
        platform="telegram",
        bot="neko",
        chat_type="supergroup",
        chat_id="-1001",
        reply_to="42",
        thread_id="7",
    )
    rules = {
        limit.key.split(":")[0]: (limit.count, limit.period) for limit in rate_limits_for(dest)
    }
    assert rules == {"chat": (1, 1.0), "bot": (30, 1.0), "group": (20, 60.0)}
    assert destination_for("web", req, None) is None


@pytest.mark.parametrize(
    ("idempotent", "resend", "kind"),
    [(False, False, "unknown"), (True, False, "send"), (False, True, "send"), (True, True, "send")],
)
def test_step_when_unconfirmed(idempotent: bool, resend: bool, kind: str) -> None:
    """A maybe-sent chunk is resent only where the platform deduplicates or it was chosen."""
    assert step_when_unconfirmed(idempotent=idempotent, resend_unconfirmed=resend).kind == kind


_REQ = httpx.Request("POST", "https://api.example/botSECRET/sendMessage")


@pytest.mark.parametrize(
    ("exc", "unconfirmed"),
    [
        (httpx.ConnectError("refused", request=_REQ), False),
        (httpx.ConnectTimeout("slow", request=_REQ), False),
        (httpx.PoolTimeout("busy", request=_REQ), False),
        (httpx.ProxyError("proxy", request=_REQ), False),
        (httpx.UnsupportedProtocol("scheme", request=_REQ), False),
        (httpx.ReadTimeout("late", request=_REQ), True),
        (httpx.WriteTimeout("late", request=_REQ), True),
        (httpx.ReadError("reset", request=_REQ), True),
        (httpx.WriteError("reset", request=_REQ), True),
        (httpx.RemoteProtocolError("disconnected", request=_REQ), True),
        (httpx.DecodingError("gzip", request=_REQ), True),
    ],
)
def test_request_failure_splits_not_sent_from_maybe_sent(
    exc: httpx.HTTPError, unconfirmed: bool
) -> None:
    """Only errors raised before the request went out are plain retries; reasons name the
    class, never the URL (it may hold a token)."""
    err = request_failure("telegram sendMessage", exc)
    assert isinstance(err, RetryLater)
    assert isinstance(err, Unconfirmed) is unconfirmed
    assert type(exc).__name__ in err.reason and "SECRET" not in err.reason
