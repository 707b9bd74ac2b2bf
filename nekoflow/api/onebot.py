"""``POST {NEKOFLOW_ONEBOT_EVENT_PATH}``: OneBot v11 HTTP POST events (NapCat's HTTP client).

The implementation POSTs each event with ``X-Self-ID`` and, when a secret is configured,
``X-Signature: sha1=<HMAC-SHA1 of the raw body>``. An unknown self id, a bot not in ``http``
mode (a reverse-WebSocket bot's QQ number is public: it must not let anyone post as it), or a
missing or wrong signature (constant-time compare; only an ``allow_unsigned`` bot goes without)
is refused with 401 before the body is parsed. The route only stores the turn and publishes it
(no turn runs inside the request) and answers 204 with no body (OneBot's "no quick
operation"). Meta events and other non-chat events are answered 204 too; a malformed message
event is a 422 naming the field. Replies go out through the deliver task (``http`` bots: the
implementation's HTTP API).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Request, Response
from fastapi.concurrency import run_in_threadpool

from nekoflow.api.bodies import load_json_body
from nekoflow.api.deps import StateDep
from nekoflow.api.errors import ApiError
from nekoflow.api.schemas import ErrorResponse
from nekoflow.errors import InputError
from nekoflow.platforms.onebot.protocol import is_meta, signature_matches
from nekoflow.platforms.onebot.settings import OneBotSettings, get_onebot_settings
from nekoflow.turns.enqueue import submit_turn

router = APIRouter(tags=["platforms"])

_E = ErrorResponse


def _settings(request: Request) -> OneBotSettings:
    override = getattr(request.app.state, "onebot_settings", None)
    return override if isinstance(override, OneBotSettings) else get_onebot_settings()


@router.post(
    get_onebot_settings().event_path,
    status_code=204,
    response_class=Response,
    responses={
        401: {
            "model": _E,
            "description": "Unknown X-Self-ID, bot not in http mode, or missing/wrong X-Signature",
        },
        422: {"model": _E, "description": "Not a OneBot v11 event (the field is named)"},
        503: {"model": _E, "description": "Database or broker configuration missing"},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    },
    summary="OneBot v11 HTTP POST: one event",
)
async def onebot_event(
    request: Request,
    state: StateDep,
    self_id: Annotated[
        str | None, Header(alias="X-Self-ID", description="The bot's QQ number")
    ] = None,
    signature: Annotated[
        str | None,
        Header(alias="X-Signature", description="sha1=<hex HMAC-SHA1 of the body with the secret>"),
    ] = None,
) -> Response:
    """Verify the bot and signature, store a message event as a turn, answer 204 at once."""
    config = _settings(request).bot(self_id.strip()) if self_id and self_id.strip() else None
    if config is None or config.mode != "http":
        raise ApiError(401, "unknown or missing X-Self-ID, or the bot is not in http mode")
    if config.secret is None and not config.allow_unsigned:
        raise ApiError(401, "missing or wrong X-Signature")
    if config.secret is not None and not (signature or "").startswith("sha1="):
        raise ApiError(401, "missing or wrong X-Signature")  # refused before the body is read
    raw = await request.body()
    if config.secret is not None and not signature_matches(
        raw, signature, config.secret.get_secret_value()
    ):
        raise ApiError(401, "missing or wrong X-Signature")
    event: Any = load_json_body(raw)
    if not isinstance(event, dict):
        raise InputError("must be a OneBot event object", field="body")
    if not is_meta(event):
        deps = await run_in_threadpool(state.turns)
        await run_in_threadpool(submit_turn, deps, "qq", event, bot=config.self_id)
    return Response(status_code=204)
