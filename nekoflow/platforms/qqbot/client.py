"""A small QQ bot OpenAPI client over httpx (sync): access tokens and classified errors.

Calls carry ``Authorization: QQBot {access_token}``; the token comes from a shared
:class:`~nekoflow.platforms.tokens.TokenCache` (one refresh at a time across workers). Errors
answer ``{"code": …, "message": …}``: they become :class:`RetryLater` (429, 5xx, a request
that never went out, a refused token — dropped from the cache so the retry gets a new one),
:class:`Unconfirmed` (a read timeout or lost answer: the message may have been sent),
:class:`DuplicateSend` (the platform already has this ``msg_id`` + ``msg_seq``: the chunk was
sent before) or :class:`QQBotError` (permanent), with reasons in our own words plus the code —
never the platform's message (free text) and never the token.

A 2xx answer whose body carries a non-zero ``code`` is that error too: QQ sometimes answers
HTTP 200 with ``{"code", "message"}``, and its error docs say 201/202 carry an error body.
The documented frequency-limit codes (:data:`RATE_CODES`) are retried like a 429.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx

from nekoflow.delivery.base import PermanentFailure, RetryLater
from nekoflow.platforms.tokens import TokenCache
from nekoflow.platforms.transport import request_failure

logging.getLogger("httpx").setLevel(logging.WARNING)
logging.getLogger("httpcore").setLevel(logging.WARNING)

#: The platform already received a message with this msg_id and msg_seq.
DUPLICATE_SEQ = 40054005
#: A message held for content review: accepted, it is shown once approved.
IN_REVIEW = frozenset({304023, 304024})
#: Token not valid any more (expired / revoked): fetch another and retry.
TOKEN_CODES = frozenset({11241, 11242, 11243, 11244})
#: Frequency limits in QQ's docs: 22009 "msg limit exceed" (send message), 20028 (channel
#: write limit), 1100100 (message rate-limited by risk control), 1100308 (guild rate limit).
#: Retried later (Retry-After when given, else the delivery backoff); other 4xx are permanent.
RATE_CODES = frozenset({22009, 20028, 1100100, 1100308})
#: Known codes → our reason words.
_KNOWN: dict[int, str] = {
    22009: "message rate limit",
    20028: "channel rate limit",
    1100100: "message rate limit",
    1100308: "guild rate limit",
    40034025: "passive reply count exceeded",
    40034028: "passive reply window passed",
    40054010: "passive reply window passed",
    304082: "user or group not reachable",
    11255: "bad request",
}


class QQBotError(PermanentFailure):
    """A QQ bot API call failed for good (carries the code)."""

    def __init__(self, reason: str, *, code: int | None = None) -> None:
        super().__init__(reason)
        self.code = code


class DuplicateSend(QQBotError):
    """The platform rejected a reused ``msg_seq``: this chunk was already delivered."""


def _body_code(data: Any) -> int | None:
    """The non-zero error code in an answer's body (``code`` or ``err_code``), else None."""
    body = data if isinstance(data, dict) else {}
    for key in ("code", "err_code"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value:
            return value
    return None


def _code(data: Any, status: int) -> int:
    """The body's error code, else the HTTP status."""
    code = _body_code(data)
    return status if code is None else code


def classify(what: str, status: int, data: Any, retry_after: str | None) -> Exception:
    """The exception for a failed answer (``data`` = parsed JSON body or None)."""
    code = _code(data, status)
    if code == DUPLICATE_SEQ:
        return DuplicateSend(f"qqbot {what}: duplicate msg_seq", code=code)
    words = _KNOWN.get(code)
    reason = f"qqbot {what}: error {code}" + (f" ({words})" if words else "")
    if status == 429 or code == 429 or code in RATE_CODES:
        try:
            wait = float(retry_after) if retry_after else None
        except ValueError:
            wait = None
        return RetryLater(reason, retry_after=wait)
    if status >= 500 or status == 408:
        return RetryLater(reason)
    return QQBotError(reason, code=code)


def fetch_access_token(
    http: httpx.Client, token_url: str, app_id: str, secret: str
) -> tuple[str, float]:
    """``POST {appId, clientSecret}`` → (access_token, expires_in seconds)."""
    try:
        resp = http.post(token_url, json={"appId": app_id, "clientSecret": secret})
    except httpx.TimeoutException:
        raise RetryLater("qqbot access token: timeout") from None
    except httpx.TransportError:
        raise RetryLater("qqbot access token: connection error") from None
    try:
        data = resp.json()
    except ValueError:
        data = None
    token = data.get("access_token") if isinstance(data, dict) else None
    if resp.status_code == 200 and isinstance(token, str) and token:
        try:
            expires_in = float(data.get("expires_in") or 7200)
        except (TypeError, ValueError):
            expires_in = 7200.0
        return token, expires_in
    err = classify("access token", resp.status_code, data, resp.headers.get("Retry-After"))
    if isinstance(err, QQBotError):
        raise QQBotError(f"{err.reason} (app id or secret refused)", code=err.code)
    raise err


class QQBotClient:
    """Calls one bot's OpenAPI; ``transport`` lets tests plug in an httpx transport."""

    def __init__(
        self,
        tokens: TokenCache,
        *,
        base_url: str = "https://api.sgroup.qq.com",
        timeout: float = 15.0,
        connect_timeout: float = 5.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.tokens = tokens
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=connect_timeout), transport=transport
        )

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Call ``method path``; the parsed JSON answer, else RetryLater / QQBotError."""
        what = path.split("/")[1] if path.count("/") > 1 else path.strip("/")
        token = self.tokens.get()
        try:
            resp = self._http.request(
                method,
                self.base_url + path,
                json=body,
                headers={"Authorization": f"QQBot {token}"},
            )
        except httpx.HTTPError as exc:
            raise request_failure(f"qqbot {what}", exc) from None
        try:
            data = resp.json()
        except ValueError:
            data = None
        if 200 <= resp.status_code < 300 and _body_code(data) is None:
            return data  # a 2xx carrying an error code is that error (QQ answers 200 + code)
        if resp.status_code == 401 or _code(data, resp.status_code) in TOKEN_CODES:
            self.tokens.invalidate(token)
            raise RetryLater(f"qqbot {what}: access token refused, refreshed")
        raise classify(what, resp.status_code, data, resp.headers.get("Retry-After"))

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()
