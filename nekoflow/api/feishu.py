"""``POST {NEKOFLOW_FEISHU_EVENT_PATH}/{app}``: Feishu's event subscription endpoint.

Security, in order: an unknown app is a 401; with an Encrypt Key set, a request carrying
``X-Lark-Signature`` must match SHA-256(timestamp + nonce + encrypt key + body) and its
timestamp be recent, and an encrypted body must decrypt with the key (AES-256-CBC, key =
SHA-256 of the encrypt key); every event must carry the app's verification token (``header.token``
in v2, ``token`` in a challenge). An event without the signature while an Encrypt Key is set is
refused (401): only the ``url_verification`` challenge may come unsigned (Feishu does not sign
it; such a body is read to at most a few KB), and it is answered only when its token matches.
A message event only stores the turn and publishes it, then answers 200; Feishu re-sends events
not answered in time, and a re-sent event is recognised by its message id. A malformed event
is a 422 naming the field.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel

from nekoflow.api.bodies import UNSIGNED_MAX_BYTES, load_json_body, read_at_most
from nekoflow.api.deps import ApiState, StateDep
from nekoflow.api.errors import ApiError
from nekoflow.api.schemas import ErrorResponse
from nekoflow.errors import InputError
from nekoflow.platforms.feishu.crypto import DecryptError, decrypt, signature_ok, token_ok
from nekoflow.platforms.feishu.events import submit_event
from nekoflow.platforms.feishu.settings import FeishuSettings, get_feishu_settings

SIG_HEADER = "X-Lark-Signature"
TS_HEADER = "X-Lark-Request-Timestamp"
NONCE_HEADER = "X-Lark-Request-Nonce"
_REFUSED = "missing or wrong signature or verification token, or unknown app"


class FeishuEventOut(BaseModel):
    """The answer: the challenge echoed back, or what became of the event."""

    challenge: str | None = None
    status: str | None = None
    turn_id: str | None = None
    reason: str | None = None


def _settings(request: Request) -> FeishuSettings:
    override = getattr(request.app.state, "feishu_settings", None)
    return override if isinstance(override, FeishuSettings) else get_feishu_settings()


def _load(raw: bytes, field: str) -> dict[str, Any]:
    data: Any = load_json_body(raw, field)
    if not isinstance(data, dict):
        raise InputError("must be a JSON object", field=field)
    return data


def _event_token(payload: dict[str, Any]) -> object:
    header = payload.get("header")
    if isinstance(header, dict) and "token" in header:
        return header.get("token")
    return payload.get("token")


def _redis_or_none(state: ApiState) -> Any:
    """The API's Redis client for the bot open_id cache, or None when Redis is unusable."""
    try:
        return state.redis()
    except Exception:
        return None


router = APIRouter(tags=["platforms"])

_E = ErrorResponse


@router.post(
    f"{get_feishu_settings().event_path}/{{app}}",
    response_model=FeishuEventOut,
    response_model_exclude_none=True,
    responses={
        401: {"model": _E, "description": "Missing or wrong signature or token, or unknown app"},
        422: {"model": _E, "description": "Not a Feishu event (the field is named)"},
        503: {"model": _E, "description": "Database or broker configuration missing"},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    },
    summary="Feishu event subscription: one (encrypted) event or the URL challenge",
)
async def feishu_event(
    request: Request,
    state: StateDep,
    app: Annotated[str, Path(pattern=r"^[A-Za-z0-9_.-]{1,64}$", description="App name")],
    signature: Annotated[str | None, Header(alias=SIG_HEADER)] = None,
    timestamp: Annotated[str | None, Header(alias=TS_HEADER)] = None,
    nonce: Annotated[str | None, Header(alias=NONCE_HEADER)] = None,
) -> FeishuEventOut:
    """Check signature and token, answer the challenge or store a message as a turn."""
    fs = _settings(request)
    config = fs.app(app)
    if config is None:
        raise ApiError(401, _REFUSED)
    key = config.encrypt_key.get_secret_value() if config.encrypt_key is not None else None
    signed = signature is not None
    if key is not None and not signed:  # only the url_verification challenge: a few hundred bytes
        unsigned = await read_at_most(request, UNSIGNED_MAX_BYTES)
        if unsigned is None:
            raise ApiError(401, _REFUSED)
        raw = unsigned
    else:
        raw = await request.body()
    if key is not None and signed:
        if not signature_ok(signature, timestamp, nonce, key, raw):
            raise ApiError(401, _REFUSED)
        try:
            skew = abs(time.time() - float(timestamp or "nan"))
        except ValueError:
            skew = float("inf")
        if not skew <= fs.max_clock_skew_seconds:
            raise ApiError(401, _REFUSED)
    payload = _load(raw, "body")
    if "encrypt" in payload:
        if key is None or not isinstance(payload["encrypt"], str):
            raise ApiError(401, _REFUSED)
        try:
            payload = _load(decrypt(key, payload["encrypt"]), "encrypt")
        except DecryptError:
            raise ApiError(401, _REFUSED) from None
    if not token_ok(_event_token(payload), config.verification_token.get_secret_value()):
        raise ApiError(401, _REFUSED)
    if payload.get("type") == "url_verification":
        challenge = payload.get("challenge")
        if not isinstance(challenge, str) or not challenge:
            raise InputError("must be a non-empty string", field="challenge")
        return FeishuEventOut(challenge=challenge)
    if key is not None and not signed:
        raise ApiError(401, _REFUSED)
    deps = await run_in_threadpool(state.turns)
    client = await run_in_threadpool(_redis_or_none, state)
    handle = await run_in_threadpool(submit_event, deps, config, fs, payload, redis_client=client)
    if handle.is_skipped:
        return FeishuEventOut(status="skipped", reason=handle.reason)
    return FeishuEventOut(status="accepted", turn_id=handle.turn_id)
