"""Error descriptions that are safe to let leave a worker: class, status code and field names only.

An exception's message may quote what a user said (an LLM gateway echoing the input, a database
error listing its parameters, pydantic showing the rejected value). Reasons stored on a turn,
shown by Flower or the API, sent in events or written to the ordinary logs are built here from
the error's class, its HTTP status and the names of the fields involved — never its message.
The full detail goes only to the opt-in debug log (``nekoflow.debuglog``).
"""

from __future__ import annotations

import hashlib
import hmac
import re

from pydantic import ValidationError

from nekoflow.errors import ConfigError, InputError


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


def safe_error(exc: BaseException) -> str:
    """``exc`` described without its message: ``LLMServerError (HTTP 503, model server
    llm.local:8000)``, ``LLMConnectionError (model server llm.local:8000)``,
    ``ValidationError (request.content: string_type)``, ``InputError (segments)``, ``KeyError``."""
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    host = getattr(exc, "host", None)  # an LLMError's model server (NEKOFLOW_LLM_BASE_URL)
    at = f"model server {host}" if isinstance(host, str) and host else ""
    if isinstance(status, int) and not isinstance(status, bool):
        return f"{name} (HTTP {status}" + (f", {at})" if at else ")")
    if at:
        return f"{name} ({at})"
    if isinstance(exc, ValidationError):
        fields = ", ".join(f"{_loc(e['loc'])}: {e['type']}" for e in exc.errors()[:5])
        return f"{name} ({fields})" if fields else name
    if isinstance(exc, InputError | ConfigError) and exc.field:
        return f"{name} ({exc.field})"
    return name


def scope_label(scope_id: str | None, *, key: bytes | None) -> str | None:
    """What monitoring shows for a scope id: the id itself, or with ``key`` a keyed hash
    (``h:`` + 16 hex digits of HMAC-SHA256) that still groups a scope's turns together."""
    if scope_id is None or key is None:
        return scope_id
    digest = hmac.new(key, scope_id.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"h:{digest[:16]}"


_USERINFO = re.compile(
    r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^\s/@:'\"]*):[^\s/@'\"]*@"
)


def redact_urls(text: str) -> str:
    """``text`` with the password of every URL in it masked: ``postgresql://app:***@db/x``
    (a bad URL echoed in an error never prints the secret back)."""
    return _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)
