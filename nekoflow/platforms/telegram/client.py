"""A small Telegram Bot API client over httpx (sync), with timeouts and classified errors.

Every method is ``POST {api_base_url}/bot{token}/{method}`` with a JSON body; the answer is
``{"ok": true, "result": …}`` or ``{"ok": false, "error_code": …, "description": …,
"parameters": {"retry_after": …, "migrate_to_chat_id": …}}``. Errors become
:class:`~nekoflow.delivery.base.RetryLater` (429 with ``retry_after``, 5xx, a request that never
went out), :class:`~nekoflow.delivery.base.Unconfirmed` (a read timeout or lost answer: it may
have been sent) or :class:`~nekoflow.delivery.base.PermanentFailure` (400 chat not found, 403
blocked, 401 bad token…; a 400 with ``migrate_to_chat_id`` carries that supergroup id for the
sender to resend to), with reasons in our own words plus the error code: never the description
(free text), never the new chat id, and never the URL (it holds the token).

httpx was chosen for its explicit timeouts, connection pooling and pluggable transports; it is
already a dependency (the OpenAI SDK uses it).
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import urlsplit

import httpx

from nekoflow.delivery.base import PermanentFailure, RetryLater
from nekoflow.platforms.transport import request_failure

# httpx logs every request URL at INFO level, and Bot API URLs contain the token.
logging.getLogger("httpx").setLevel(logging.WARNING)
logging.getLogger("httpcore").setLevel(logging.WARNING)

#: Known descriptions (lower case) → our reason words.
_KNOWN: tuple[tuple[str, str], ...] = (
    ("bot was blocked by the user", "bot blocked by the user"),
    ("chat not found", "chat not found"),
    ("user is deactivated", "user deactivated"),
    ("bot was kicked", "bot removed from the chat"),
    ("not enough rights", "bot lacks the rights to send"),
    ("have no rights to send", "bot lacks the rights to send"),
    ("message thread not found", "topic not found"),
    ("group chat was upgraded to a supergroup", "group migrated to a supergroup"),
    ("message is too long", "message too long"),
    ("message text is empty", "empty message"),
    ("unauthorized", "bad bot token"),
    ("terminated by other getupdates", "another poller is running"),
    ("webhook is active", "a webhook is set"),
)


class TelegramError(PermanentFailure):
    """A Bot API call failed for good (carries the error code and, when a group was upgraded to
    a supergroup, the supergroup's chat id from ``parameters.migrate_to_chat_id``)."""

    def __init__(
        self, reason: str, *, code: int | None = None, migrate_to_chat_id: int | None = None
    ) -> None:
        super().__init__(reason)
        self.code = code
        self.migrate_to_chat_id = migrate_to_chat_id


def classify(method: str, status: int, data: Any) -> Exception:
    """The exception for a failed Bot API answer (``data`` = the parsed JSON body or None)."""
    body = data if isinstance(data, dict) else {}
    code = body.get("error_code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else status
    desc = str(body.get("description") or "").lower()
    words = next((ours for theirs, ours in _KNOWN if theirs in desc), None)
    reason = f"telegram {method}: error {code}" + (f" ({words})" if words else "")
    params = body.get("parameters") if isinstance(body.get("parameters"), dict) else {}
    if code == 429:
        retry_after = params.get("retry_after")
        ok = isinstance(retry_after, int | float) and not isinstance(retry_after, bool)
        return RetryLater(reason, retry_after=float(retry_after) if ok else None)
    if code >= 500 or code == 408:
        return RetryLater(reason)
    migrate = params.get("migrate_to_chat_id")
    if isinstance(migrate, int) and not isinstance(migrate, bool):
        if not words:
            reason += " (group migrated to a supergroup)"
        return TelegramError(reason, code=code, migrate_to_chat_id=migrate)
    return TelegramError(reason, code=code)


class BotApiClient:
    """Calls one bot's Bot API methods; ``transport`` lets tests plug in an httpx transport."""

    def __init__(
        self,
        token: str,
        *,
        base_url: str = "https://api.telegram.org",
        timeout: float = 15.0,
        connect_timeout: float = 5.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._prefix = f"{base_url.rstrip('/')}/bot{token}/"
        parts = urlsplit(base_url)
        #: where requests go, for reasons (never the URL: its path holds the token)
        self.host = parts.hostname or "?"
        if parts.port:
            self.host += f":{parts.port}"
        self._timeout = httpx.Timeout(timeout, connect=connect_timeout)
        self._http = httpx.Client(timeout=self._timeout, transport=transport)

    def call(
        self,
        method: str,
        params: dict[str, Any],
        *,
        timeout: float | None = None,
        files: dict[str, tuple[str, bytes, str]] | None = None,
    ) -> Any:
        """Call ``method``; the ``result`` on success, else RetryLater / TelegramError.

        ``files`` (field → (file name, bytes, MIME type)) uploads as multipart/form-data, the
        other parameters then go as form fields (objects JSON-encoded, as the Bot API reads them).
        """
        req_timeout = self._timeout if timeout is None else httpx.Timeout(timeout, connect=5.0)
        try:
            if files:
                form = {k: v if isinstance(v, str) else json.dumps(v) for k, v in params.items()}
                resp = self._http.post(
                    self._prefix + method, data=form, files=files, timeout=req_timeout
                )
            else:
                resp = self._http.post(self._prefix + method, json=params, timeout=req_timeout)
        except httpx.HTTPError as exc:
            raise request_failure(f"telegram {method} at {self.host}", exc) from None
        try:
            data = resp.json()
        except ValueError:
            data = None
        if resp.status_code == 200 and isinstance(data, dict) and data.get("ok") is True:
            return data.get("result")
        raise classify(method, resp.status_code, data)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()
