"""``POST {NEKOFLOW_TELEGRAM_WEBHOOK_PATH}/{bot}``: Telegram's webhook.

Telegram sends each ``Update`` with the bot's ``secret_token`` in
``X-Telegram-Bot-Api-Secret-Token``; a request without it, with a wrong one (constant-time
compare) or for a bot that is not set up for webhooks is refused with 401 before its body is
read. The route only stores the turn and publishes it (no turn runs inside the request), then
answers 200 — Telegram re-sends updates that are not answered with 2xx, and a re-sent update is
recognised by its message id (no second turn). A malformed update is a 422 naming the field.
The reply goes back through the deliver task (``nekoflow.delivery``), not in this response.
"""

from __future__ import annotations

import hmac
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel

from nekoflow.api.bodies import load_json_body
from nekoflow.api.deps import StateDep
from nekoflow.api.errors import ApiError
from nekoflow.api.schemas import ErrorResponse
from nekoflow.errors import InputError
from nekoflow.platforms.telegram.settings import TelegramSettings, get_telegram_settings
from nekoflow.turns.enqueue import submit_turn

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


class TelegramWebhookOut(BaseModel):
    """What the webhook answered: the update became a turn (``accepted``) or not (``skipped``)."""

    ok: bool = True
    status: str
    turn_id: str | None = None
    reason: str | None = None


def _settings(request: Request) -> TelegramSettings:
    override = getattr(request.app.state, "telegram_settings", None)
    return override if isinstance(override, TelegramSettings) else get_telegram_settings()


def secret_matches(given: str | None, expected: str) -> bool:
    """Constant-time comparison of the header with the bot's secret token."""
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


router = APIRouter(tags=["platforms"])

_E = ErrorResponse


@router.post(
    f"{get_telegram_settings().webhook_path}/{{bot}}",
    response_model=TelegramWebhookOut,
    responses={
        401: {"model": _E, "description": "Missing or wrong secret token, or unknown bot"},
        422: {"model": _E, "description": "Not a Telegram Update (the field is named)"},
        503: {"model": _E, "description": "Database or broker configuration missing"},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    },
    summary="Telegram webhook: one Bot API Update",
)
async def telegram_webhook(
    request: Request,
    state: StateDep,
    bot: Annotated[str, Path(pattern=r"^[A-Za-z0-9_.-]{1,64}$", description="Bot name")],
    secret: Annotated[
        str | None,
        Header(alias=SECRET_HEADER, description="The bot's secret_token, as Telegram sends it"),
    ] = None,
) -> TelegramWebhookOut:
    """Verify the secret token, store the update as a turn, answer at once."""
    config = _settings(request).bot(bot)
    expected = config.secret_token if config is not None else None
    if (
        config is None
        or config.mode != "webhook"
        or expected is None
        or not secret_matches(secret, expected.get_secret_value())
    ):
        raise ApiError(401, f"missing or wrong {SECRET_HEADER}, or unknown bot")
    raw = await request.body()
    update: Any = load_json_body(raw)
    if not isinstance(update, dict):
        raise InputError("must be a Telegram Update object", field="body")
    deps = await run_in_threadpool(state.turns)
    handle = await run_in_threadpool(submit_turn, deps, "telegram", update, bot=config.name)
    if handle.is_skipped:
        return TelegramWebhookOut(status="skipped", reason=handle.reason)
    return TelegramWebhookOut(status="accepted", turn_id=handle.turn_id)
