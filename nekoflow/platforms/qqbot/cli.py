"""``nekoflow gateway qqbot``: hold the WebSocket gateway session of gateway-mode QQ bots."""

from __future__ import annotations

import threading
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from nekoflow.platforms.qqbot.settings import QQBotSettings
from nekoflow.platforms.runtime import LogLevel, configure_logging, preflight_settings
from nekoflow.settings_errors import validation_lines

err_console = Console(stderr=True)
console = Console()


def _settings_or_exit() -> QQBotSettings:
    try:
        return QQBotSettings()
    except ValidationError as exc:  # one line per error naming the variable and field
        for line in validation_lines(exc, QQBotSettings):
            err_console.print(escape(line), soft_wrap=True)
        raise typer.Exit(2) from None


def qqbot_gateway_command(
    bot: Annotated[
        list[str] | None, typer.Option("--bot", help="Bot name (repeatable); default: all")
    ] = None,
    log_level: LogLevel = "INFO",
) -> None:
    """Connect gateway-mode QQ bots to the QQ gateway (identify, heartbeat, resume)."""
    configure_logging(log_level)
    from nekoflow.platforms.qqbot.gateway import QQBotGateway
    from nekoflow.platforms.qqbot.sender import make_client

    qq = _settings_or_exit()
    unknown = sorted(set(bot or []) - {b.name for b in qq.bots})
    if unknown:
        err_console.print(f"[red]unknown bot[/red] {escape(', '.join(unknown))} (--bot)")
        raise typer.Exit(2)
    bots = [b for b in qq.bots if (not bot or b.name in bot) and b.mode == "gateway"]
    if not bots:
        err_console.print(
            "no gateway-mode bot: set NEKOFLOW_QQBOT_APP_ID, NEKOFLOW_QQBOT_SECRET and "
            "NEKOFLOW_QQBOT_MODE=gateway (or NEKOFLOW_QQBOT_BOTS)"
        )
        raise typer.Exit(2)
    from nekoflow.settings import get_settings
    from nekoflow.taskqueue import task_queue

    base = get_settings()
    preflight_settings(base)
    queue = task_queue()
    queue.get_deps()  # a broken model or flow setting stops here: one line naming it

    def submit(payload: dict, name: str) -> object:
        return queue.enqueue_turn("qqbot", payload, bot=name)

    stop = threading.Event()
    threads = []
    for b in bots:
        gateway = QQBotGateway(b, make_client(qq, b.name, base), submit)
        t = threading.Thread(target=gateway.run, args=(stop,), name=f"qqbot-{b.name}", daemon=True)
        t.start()
        threads.append(t)
    console.print(
        f"QQ gateway for bot(s) {escape(', '.join(b.name for b in bots))} — Ctrl-C to stop"
    )
    try:
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=1.0)
    except KeyboardInterrupt:
        stop.set()
        for t in threads:
            t.join(timeout=5)
