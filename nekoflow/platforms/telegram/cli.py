"""``nekoflow gateway telegram``: poll Telegram for updates, or register the webhook."""

from __future__ import annotations

from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from nekoflow.platforms.runtime import LogLevel, configure_logging, preflight
from nekoflow.platforms.telegram.settings import TelegramSettings
from nekoflow.settings_errors import validation_lines

err_console = Console(stderr=True)
console = Console()


def _settings_or_exit() -> TelegramSettings:
    try:
        return TelegramSettings()
    except ValidationError as exc:  # one line per error naming the variable and field
        for line in validation_lines(exc, TelegramSettings):
            err_console.print(escape(line), soft_wrap=True)
        raise typer.Exit(2) from None


def telegram_gateway_command(
    bot: Annotated[
        list[str] | None, typer.Option("--bot", help="Bot name (repeatable); default: all")
    ] = None,
    set_webhook: Annotated[
        bool,
        typer.Option("--set-webhook", help="Register the webhook of webhook-mode bots and exit"),
    ] = False,
    log_level: LogLevel = "INFO",
) -> None:
    """Long-poll Telegram (getUpdates, offset kept in SQL) for polling-mode bots."""
    configure_logging(log_level)
    from nekoflow.platforms.telegram.client import BotApiClient
    from nekoflow.platforms.telegram.gateway import run_gateways
    from nekoflow.platforms.telegram.gateway import set_webhook as register

    settings = _settings_or_exit()
    bots = [b for b in settings.bots if not bot or b.name in bot]
    unknown = sorted(set(bot or []) - {b.name for b in settings.bots})
    if unknown:
        err_console.print(f"[red]unknown bot[/red] {escape(', '.join(unknown))} (--bot)")
        raise typer.Exit(2)
    if set_webhook:
        hooks = [b for b in bots if b.mode == "webhook"]
        if not hooks:
            err_console.print("no webhook-mode bot (NEKOFLOW_TELEGRAM_MODE=webhook)")
            raise typer.Exit(2)
        for b in hooks:
            client = BotApiClient(
                b.token.get_secret_value(),
                base_url=settings.api_base_url,
                timeout=settings.timeout,
                connect_timeout=settings.connect_timeout,
            )
            url = register(settings, b, client)
            console.print(f"webhook of bot {escape(b.name)} set to {escape(url)}")
        return
    pollers = [b for b in bots if b.mode == "polling"]
    if not pollers:
        err_console.print(
            "no polling-mode bot: set NEKOFLOW_TELEGRAM_TOKEN (or NEKOFLOW_TELEGRAM_BOTS)"
        )
        raise typer.Exit(2)
    from nekoflow.settings import get_settings
    from nekoflow.storage import create_all, make_engine
    from nekoflow.taskqueue import task_queue

    base = get_settings()
    engine = make_engine(base.database_url)
    preflight(engine, base.database_url, base.redis_url if base.redis_configured else None)
    create_all(engine)
    queue = task_queue()
    queue.get_deps()  # a broken model or flow setting stops here: one line naming it

    def submit(update: dict, name: str) -> object:
        return queue.enqueue_turn("telegram", update, bot=name)

    names = ", ".join(b.name for b in pollers)
    console.print(f"polling Telegram for bot(s) {escape(names)} — Ctrl-C to stop")
    errors = run_gateways(engine, settings, pollers, submit)
    for line in errors:
        err_console.print(f"[red]error:[/red] {escape(line)}")
    if errors:
        raise typer.Exit(1)
