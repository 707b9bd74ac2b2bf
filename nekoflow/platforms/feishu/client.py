"""A small Feishu Open API client over httpx (sync): tenant token, bot info, classified errors.

Answers are ``{"code": 0, "msg": …, "data": …}``; a non-zero code or HTTP error becomes
:class:`RetryLater` (HTTP 429 / code 99991400 / 230020 / 11232 rate limits with the
``x-ogw-ratelimit-reset`` wait, 5xx, timeouts, connection errors, a refused tenant token —
dropped from the cache so the retry fetches another) or :class:`FeishuError` (permanent), with
reasons in our own words plus the code — never the ``msg`` (free text) nor the token.
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

#: Rate limits: 99991400 (gateway frequency limit, HTTP 429 or 400 on older APIs), 230020 (IM
#: send frequency limit), 11232 (limit under system load at peak times, "频控策略" page).
RATE_CODES = frozenset({99991400, 230020, 11232})
TOKEN_CODES = frozenset({99991661, 99991663, 99991664, 99991665, 99991668, 99991671})
_KNOWN: dict[int, str] = {
    230002: "bot not in the chat",
    230006: "bot ability not enabled",
    230011: "the message replied to was recalled",
    230013: "user outside the bot's availability",
    230017: "bot blocked by the user",
    230027: "no permission to send",
    230099: "message content rejected",
    99991672: "missing API scope im:message",
    10003: "app id or secret refused",
    10014: "app id or secret refused",
}


class FeishuError(PermanentFailure):
    """A Feishu call failed for good (carries the code)."""

    def __init__(self, reason: str, *, code: int | None = None) -> None:
        super().__init__(reason)
        self.code = code


def _wait(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


def classify(what: str, status: int, data: Any, reset: str | None) -> Exception:
    """The exception for a failed answer (``data`` = parsed JSON body or None)."""
    body = data if isinstance(data, dict) else {}
    raw = body.get("code")
    code = raw if isinstance(raw, int) and not isinstance(raw, bool) and raw else status
    words = _KNOWN.get(code)
    reason = f"feishu {what}: error {code}" + (f" ({words})" if words else "")
    if status == 429 or code in RATE_CODES:
        return RetryLater(reason, retry_after=_wait(reset))
    if status >= 500 or status == 408:
        return RetryLater(reason)
    return FeishuError(reason, code=code)


def _post(http: httpx.Client, url: str, what: str, **kw: Any) -> httpx.Response:
    try:
        return http.request(kw.pop("method", "POST"), url, **kw)
    except httpx.HTTPError as exc:  # unconfirmed sends are resent: the uuid deduplicates them
        raise request_failure(f"feishu {what}", exc) from None


def _json(resp: httpx.Response) -> Any:
    try:
        return resp.json()
    except ValueError:
        return None


def fetch_tenant_token(
    http: httpx.Client, base_url: str, app_id: str, app_secret: str
) -> tuple[str, float]:
    """Internal app tenant token → (tenant_access_token, expire seconds)."""
    url = f"{base_url}/open-apis/auth/v3/tenant_access_token/internal"
    resp = _post(http, url, "tenant token", json={"app_id": app_id, "app_secret": app_secret})
    data = _json(resp)
    ok = resp.status_code == 200 and isinstance(data, dict) and data.get("code") == 0
    token = data.get("tenant_access_token") if ok else None
    if isinstance(token, str) and token:
        expire = data.get("expire")
        ok_expire = isinstance(expire, int | float) and not isinstance(expire, bool)
        return token, float(expire) if ok_expire else 7200.0
    raise classify(
        "tenant token", resp.status_code, data, resp.headers.get("x-ogw-ratelimit-reset")
    )


class FeishuClient:
    """Calls one app's Open API; ``transport`` lets tests plug in an httpx transport."""

    def __init__(
        self,
        tokens: TokenCache,
        *,
        base_url: str = "https://open.feishu.cn",
        timeout: float = 15.0,
        connect_timeout: float = 5.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.tokens = tokens
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=connect_timeout), transport=transport
        )

    def call(
        self, method: str, path: str, body: dict[str, Any] | None = None, **params: str
    ) -> Any:
        """Call ``method path``; the answer's ``data`` (or the whole answer when it has none)."""
        what = path.removeprefix("/open-apis/").split("/")[0]
        token = self.tokens.get()
        resp = _post(
            self._http,
            self.base_url + path,
            what,
            method=method,
            json=body,
            params=params or None,
            headers={"Authorization": f"Bearer {token}"},
        )
        data = _json(resp)
        code = data.get("code") if isinstance(data, dict) else None
        if resp.status_code == 200 and code == 0:
            return data.get("data", data)
        if code in TOKEN_CODES or resp.status_code == 401:
            self.tokens.invalidate(token)
            raise RetryLater(f"feishu {what}: tenant token refused, refreshed")
        raise classify(what, resp.status_code, data, resp.headers.get("x-ogw-ratelimit-reset"))

    def upload_file(
        self, file_type: str, file_name: str, data: bytes, mime: str, *, duration_ms: int = 0
    ) -> str:
        """Upload a file (``POST /open-apis/im/v1/files``, multipart); its ``file_key``."""
        token = self.tokens.get()
        form = {"file_type": file_type, "file_name": file_name}
        if duration_ms:
            form["duration"] = str(duration_ms)
        resp = _post(
            self._http,
            self.base_url + "/open-apis/im/v1/files",
            "im",
            data=form,
            files={"file": (file_name, data, mime)},
            headers={"Authorization": f"Bearer {token}"},
        )
        body = _json(resp)
        code = body.get("code") if isinstance(body, dict) else None
        if resp.status_code == 200 and code == 0:
            key = (body.get("data") or {}).get("file_key")
            if isinstance(key, str) and key:
                return key
            raise FeishuError("feishu file upload: no file_key in the answer")
        if code in TOKEN_CODES or resp.status_code == 401:
            self.tokens.invalidate(token)
            raise RetryLater("feishu im: tenant token refused, refreshed")
        raise classify("im", resp.status_code, body, resp.headers.get("x-ogw-ratelimit-reset"))

    def bot_open_id(self) -> str:
        """The app bot's own open_id (``GET /open-apis/bot/v3/info``)."""
        data = self.call("GET", "/open-apis/bot/v3/info")
        bot = data.get("bot") if isinstance(data, dict) else None
        open_id = bot.get("open_id") if isinstance(bot, dict) else None
        if not isinstance(open_id, str) or not open_id:
            raise FeishuError("feishu bot info: no open_id in the answer")
        return open_id

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()
