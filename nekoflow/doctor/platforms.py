"""The platform probes of ``nekoflow doctor``: each configured bot's credentials really work
(Telegram getMe and webhook, QQ bot access token, Feishu tenant token) and each OneBot account
is connected (the gateway's heartbeat key in Redis)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from nekoflow.doctor.probes import short
from nekoflow.doctor.rules import Check, webhook_registered
from nekoflow.settings import Settings


def settings_error(platform: str, exc: Exception) -> Check:
    """Settings that do not load: each bad one named as its variable, no input value shown."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return Check(platform, False, short(exc), "correct the NEKOFLOW_* settings")
    prefix = "NEKOFLOW_" if platform == "settings" else f"NEKOFLOW_{platform.upper()}_"
    lines = []
    for err in errors():
        loc = "_".join(str(p) for p in err.get("loc", ()) if not isinstance(p, int))
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        lines.append(f"{prefix}{loc.upper()}: {msg}" if loc else msg)
    return Check(platform, False, "; ".join(lines)[:300], f"correct the {prefix}* setting named")


def _load(platform: str, getter: Callable[[], Any]) -> tuple[Any, Check | None]:
    try:
        return getter(), None
    except Exception as exc:
        return None, settings_error(platform, exc)


def telegram(timeout: float) -> list[Check]:
    """getMe for every bot, and getWebhookInfo for webhook-mode bots."""
    from nekoflow.platforms.telegram.client import BotApiClient, TelegramError
    from nekoflow.platforms.telegram.settings import get_telegram_settings

    settings, error = _load("telegram", get_telegram_settings)
    if error is not None:
        return [error]
    out = []
    for bot in settings.bots:
        name = f"telegram {bot.name}"
        client = BotApiClient(
            bot.token.get_secret_value(),
            base_url=settings.api_base_url,
            timeout=timeout,
            connect_timeout=timeout,
        )
        try:
            me = client.call("getMe", {})
            if bot.mode == "webhook":
                info = client.call("getWebhookInfo", {})
        except TelegramError as exc:
            out.append(
                Check(
                    name,
                    False,
                    f"getMe refused: {exc.reason}",
                    "the bot token is wrong: copy it from @BotFather into NEKOFLOW_TELEGRAM_TOKEN "
                    "(or the bot's token in NEKOFLOW_TELEGRAM_BOTS)",
                )
            )
            continue
        except Exception as exc:
            out.append(
                Check(
                    name,
                    False,
                    f"{settings.api_base_url} unreachable ({short(exc)})",
                    "check NEKOFLOW_TELEGRAM_API_BASE_URL and the network",
                )
            )
            continue
        finally:
            client.close()
        username = str((me or {}).get("username") or "")
        if bot.bot_username and bot.bot_username.lstrip("@").lower() != username.lower():
            out.append(
                Check(
                    name,
                    False,
                    f"the token is @{username}'s, bot_username says @{bot.bot_username}",
                    f"set NEKOFLOW_TELEGRAM_BOT_USERNAME={username}",
                )
            )
        else:
            out.append(Check(name, True, f"@{username} ({bot.mode})"))
        if bot.mode == "webhook":
            expected = (
                f"{settings.public_url}{settings.webhook_path}/{bot.name}"
                if settings.public_url
                else None
            )
            out.append(webhook_registered(bot.name, expected, info or {}))
    return out


def onebot(settings: Settings, client: Any, onebot_settings: Any = None) -> list[Check]:
    """Every reverse-WebSocket account: connected to ``nekoflow gateway onebot`` right now."""
    from nekoflow.platforms.onebot.gateway import heartbeat_key
    from nekoflow.platforms.onebot.settings import get_onebot_settings

    if onebot_settings is None:
        onebot_settings, error = _load("onebot", get_onebot_settings)
        if error is not None:
            return [error]
    out = []
    for bot in onebot_settings.bots:
        name = f"onebot {bot.self_id}"
        if bot.mode != "ws":
            out.append(Check(name, True, f"http mode, events at {onebot_settings.event_path}"))
            continue
        try:
            seen = client.get(heartbeat_key(settings.redis_prefix, bot.self_id))
        except Exception as exc:
            out.append(Check(name, False, f"not readable ({short(exc)})", "fix Redis first"))
            continue
        if seen is None:
            refused = _last_refusal(client, settings.redis_prefix)
            out.append(
                Check(
                    name,
                    False,
                    "not connected to the gateway"
                    + (f"; its last refused handshake: {refused}" if refused else ""),
                    "run `nekoflow gateway onebot` and point NapCat's reverse WebSocket at "
                    f"ws://<host>:{onebot_settings.ws_port}{onebot_settings.ws_path} with QQ "
                    f"{bot.self_id} and NEKOFLOW_ONEBOT_ACCESS_TOKEN as its token",
                )
            )
        else:
            out.append(Check(name, True, "connected to the gateway"))
    return out


def _last_refusal(client: Any, prefix: str) -> str | None:
    """The gateway's newest refused handshake (``nekoflow.platforms.onebot.refusals``), if any."""
    from nekoflow.platforms.onebot.refusals import last_refusal

    try:
        return last_refusal(client, prefix)
    except Exception:  # Redis was readable a moment ago; the line stands without it
        return None


def _token_check(
    name: str,
    fetch: Callable[[], object],
    refused: type[Exception],
    what: str,
    fix_refused: str,
    url: str,
    fix_unreachable: str,
    issued: str,
) -> Check:
    """One bot's token request: issued, refused (the credentials) or unreachable (the URL)."""
    try:
        fetch()
    except refused as exc:
        reason = getattr(exc, "reason", type(exc).__name__)
        return Check(name, False, f"{what} refused: {reason}", fix_refused)
    except Exception as exc:
        return Check(name, False, f"{url} unreachable ({short(exc)})", fix_unreachable)
    return Check(name, True, issued)


def qqbot(timeout: float) -> list[Check]:
    """An access token for every QQ official bot (app id + secret accepted)."""
    import httpx

    from nekoflow.platforms.qqbot.client import QQBotError, fetch_access_token
    from nekoflow.platforms.qqbot.settings import get_qqbot_settings

    settings, error = _load("qqbot", get_qqbot_settings)
    if error is not None:
        return [error]
    with httpx.Client(timeout=timeout) as http:
        return [
            _token_check(
                f"qqbot {bot.name}",
                partial(
                    fetch_access_token,
                    http,
                    settings.token_url,
                    bot.app_id,
                    bot.secret.get_secret_value(),
                ),
                QQBotError,
                "access token",
                "check NEKOFLOW_QQBOT_APP_ID and NEKOFLOW_QQBOT_SECRET (or NEKOFLOW_QQBOT_BOTS)",
                settings.token_url,
                "check NEKOFLOW_QQBOT_TOKEN_URL and the network",
                f"access token issued for app {bot.app_id} ({bot.mode})",
            )
            for bot in settings.bots
        ]


def feishu(timeout: float) -> list[Check]:
    """A tenant access token for every Feishu app (app id + secret accepted)."""
    import httpx

    from nekoflow.platforms.feishu.client import FeishuError, fetch_tenant_token
    from nekoflow.platforms.feishu.settings import get_feishu_settings

    settings, error = _load("feishu", get_feishu_settings)
    if error is not None:
        return [error]
    with httpx.Client(timeout=timeout) as http:
        return [
            _token_check(
                f"feishu {app.name}",
                partial(
                    fetch_tenant_token,
                    http,
                    settings.api_base_url,
                    app.app_id,
                    app.app_secret.get_secret_value(),
                ),
                FeishuError,
                "tenant token",
                "check NEKOFLOW_FEISHU_APP_ID and NEKOFLOW_FEISHU_APP_SECRET (or _APPS)",
                settings.api_base_url,
                "check NEKOFLOW_FEISHU_API_BASE_URL and the network",
                f"tenant token issued for app {app.app_id} ({app.mode})",
            )
            for app in settings.apps
        ]
