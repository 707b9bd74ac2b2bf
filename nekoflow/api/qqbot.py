"""``POST {NEKOFLOW_QQBOT_WEBHOOK_PATH}/{bot}``: the QQ official bot's HTTP callback.

Every event carries ``X-Signature-Ed25519`` over ``X-Signature-Timestamp + body`` with the key
derived from the bot secret; a request without it or with a wrong one, or for a bot that is not
set up for webhooks, or a timestamp further than ``max_clock_skew_seconds`` from now (no replay),
is refused with 401 before the body is parsed; an unsigned body (only the op 13 validation may
come so) is read to at most a few KB. The op 13 validation is
answered with ``{plain_token, signature}``; it is checked when signed, and its ``plain_token``
and ``event_ts`` must be short tokens / digits, so the answer can never be a signature over
anything that parses as an event (no signing oracle). A dispatch (op 0) only stores the turn
and publishes it (no turn runs inside the request), then answers op 12 (callback ACK); a
re-sent event is recognised by its message id (no second turn). A malformed event is a 422
naming the field. The reply goes back through the deliver task, not this response.
"""

from __future__ import annotations

import re
import time
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel

from nekoflow.api.bodies import UNSIGNED_MAX_BYTES, load_json_body, read_at_most
from nekoflow.api.deps import StateDep
from nekoflow.api.errors import ApiError
from nekoflow.api.schemas import ErrorResponse
from nekoflow.errors import InputError
from nekoflow.platforms.qqbot.crypto import validation_answer, verify
from nekoflow.platforms.qqbot.settings import QQBotSettings, get_qqbot_settings
from nekoflow.turns.enqueue import submit_turn

SIG_HEADER = "X-Signature-Ed25519"
TS_HEADER = "X-Signature-Timestamp"
_PLAIN_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_EVENT_TS = re.compile(r"^[0-9]{1,20}$")


class QQBotWebhookOut(BaseModel):
    """The callback's answer: op 12 ACK with what became of the event, or the op 13 answer."""

    op: int | None = 12
    status: str | None = None
    turn_id: str | None = None
    reason: str | None = None
    plain_token: str | None = None
    signature: str | None = None


def _settings(request: Request) -> QQBotSettings:
    override = getattr(request.app.state, "qqbot_settings", None)
    return override if isinstance(override, QQBotSettings) else get_qqbot_settings()


def _fresh(timestamp: str | None, settings: QQBotSettings) -> bool:
    """Whether the signed timestamp (seconds) is within the allowed clock skew of now."""
    if timestamp is None or not _EVENT_TS.match(timestamp):
        return False
    return abs(time.time() - int(timestamp)) <= settings.max_clock_skew_seconds


def _validation(secret: str, payload: dict[str, Any]) -> QQBotWebhookOut:
    d = payload.get("d")
    if not isinstance(d, dict):
        raise InputError("must be an object", field="d")
    token, ts = d.get("plain_token"), d.get("event_ts")
    if isinstance(ts, int) and not isinstance(ts, bool):
        ts = str(ts)
    if not isinstance(token, str) or not _PLAIN_TOKEN.match(token):
        raise InputError("must be 1-128 letters, digits, '_' or '-'", field="d.plain_token")
    if not isinstance(ts, str) or not _EVENT_TS.match(ts):
        raise InputError("must be a number of seconds", field="d.event_ts")
    answer = validation_answer(secret, token, ts)
    return QQBotWebhookOut(op=None, **answer)


router = APIRouter(tags=["platforms"])

_E = ErrorResponse


@router.post(
    f"{get_qqbot_settings().webhook_path}/{{bot}}",
    response_model=QQBotWebhookOut,
    response_model_exclude_none=True,
    responses={
        401: {"model": _E, "description": "Missing or wrong signature, or unknown bot"},
        422: {"model": _E, "description": "Not a QQ bot payload (the field is named)"},
        503: {"model": _E, "description": "Database or broker configuration missing"},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    },
    summary="QQ official bot callback: one signed payload",
)
async def qqbot_webhook(
    request: Request,
    state: StateDep,
    bot: Annotated[str, Path(pattern=r"^[A-Za-z0-9_.-]{1,64}$", description="Bot name")],
    signature: Annotated[
        str | None, Header(alias=SIG_HEADER, description="Hex Ed25519 signature")
    ] = None,
    timestamp: Annotated[
        str | None, Header(alias=TS_HEADER, description="The signed timestamp")
    ] = None,
) -> QQBotWebhookOut:
    """Verify the signature, answer a validation or store a message as a turn, at once."""
    fs = _settings(request)
    config = fs.bot(bot)
    if config is None or config.mode != "webhook":
        raise ApiError(401, f"missing or wrong {SIG_HEADER}, or unknown bot")
    secret = config.secret.get_secret_value()
    signed = signature is not None or timestamp is not None
    if signed:
        raw = await request.body()
        if not verify(secret, signature, timestamp, raw) or not _fresh(timestamp, fs):
            raise ApiError(401, f"missing or wrong {SIG_HEADER}, or unknown bot")
    else:  # only the op 13 validation may come unsigned: a few hundred bytes
        unsigned = await read_at_most(request, UNSIGNED_MAX_BYTES)
        if unsigned is None:
            raise ApiError(401, f"missing or wrong {SIG_HEADER}, or unknown bot")
        raw = unsigned
    payload: Any = load_json_body(raw)
    if not isinstance(payload, dict):
        raise InputError("must be a QQ bot payload object", field="body")
    op = payload.get("op")
    if op == 13:
        return _validation(secret, payload)
    if not signed:
        raise ApiError(401, f"missing or wrong {SIG_HEADER}, or unknown bot")
    if op != 0:
        return QQBotWebhookOut(status="skipped", reason="not a dispatch")
    deps = await run_in_threadpool(state.turns)
    handle = await run_in_threadpool(submit_turn, deps, "qqbot", payload, bot=config.name)
    if handle.is_skipped:
        return QQBotWebhookOut(status="skipped", reason=handle.reason)
    return QQBotWebhookOut(status="accepted", turn_id=handle.turn_id)
