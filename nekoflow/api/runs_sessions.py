"""Runs-page login sessions in Redis: random ids that expire, end on log out or a new token,
and a per-client throttle of wrong tokens."""

from __future__ import annotations

import hashlib
import hmac
import secrets

import redis

from nekoflow.api.deps import ApiState

SESSION_SECONDS = 12 * 3600
"""How long a runs-page login lasts."""
LOGIN_MAX_FAILURES = 10
"""Wrong tokens a client may try per :data:`LOGIN_WINDOW_SECONDS` before logins answer 429."""
LOGIN_WINDOW_SECONDS = 900


def _token_mark(token: str) -> str:
    """What a session remembers of the token it was opened with (changing the token ends it)."""
    return hmac.new(token.encode("utf-8"), b"nekoflow runs page", hashlib.sha256).hexdigest()


def _session_key(state: ApiState, session_id: str) -> str:
    digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()
    return f"{state.settings.redis_prefix}:runs-session:{digest}"


def open_session(state: ApiState, token: str) -> str:
    """A new random session id, stored in Redis for :data:`SESSION_SECONDS`."""
    session_id = secrets.token_urlsafe(32)
    state.redis().set(_session_key(state, session_id), _token_mark(token), ex=SESSION_SECONDS)
    return session_id


def session_valid(state: ApiState, session_id: str, token: str) -> bool:
    """Whether ``session_id`` is a live session opened with the current token."""
    try:
        mark = state.redis().get(_session_key(state, session_id))
    except redis.RedisError:
        return False
    given = mark.decode() if isinstance(mark, bytes) else str(mark or "")
    return bool(mark) and hmac.compare_digest(given, _token_mark(token))


def close_session(state: ApiState, session_id: str) -> None:
    """Revoke ``session_id`` (log out)."""
    state.redis().delete(_session_key(state, session_id))


def _failures_key(state: ApiState, client: str) -> str:
    return f"{state.settings.redis_prefix}:runs-login-failures:{client}"


def login_blocked(state: ApiState, client: str) -> bool:
    """Whether ``client`` sent :data:`LOGIN_MAX_FAILURES` wrong tokens within the window."""
    return int(state.redis().get(_failures_key(state, client)) or 0) >= LOGIN_MAX_FAILURES


def record_failure(state: ApiState, client: str) -> None:
    """Count one wrong token of ``client`` (the window restarts with each one)."""
    pipe = state.redis().pipeline()
    pipe.incr(_failures_key(state, client))
    pipe.expire(_failures_key(state, client), LOGIN_WINDOW_SECONDS)
    pipe.execute()
