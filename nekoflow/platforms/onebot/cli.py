"""``nekoflow gateway onebot``: the reverse WebSocket server for NapCat / Lagrange / go-cqhttp."""

from __future__ import annotations

import asyncio
import signal
from typing import Annotated

import typer
from pydantic import ValidationError
from pydantic_settings import SettingsError
from rich.console import Console
from rich.markup import escape

from nekoflow.platforms.onebot.settings import OneBotSettings
from nekoflow.platforms.runtime import LogLevel, configure_logging, preflight
from nekoflow.settings_errors import parse_error_line, validation_lines

err_console = Console(stderr=True)
console = Console()


def _settings_or_exit() -> OneBotSettings:
    try:
        return OneBotSettings()
    except ValidationError as exc:  # one line per error naming the variable and field
        for line in validation_lines(exc, OneBotSettings):
            err_console.print(escape(line), soft_wrap=True)
        raise typer.Exit(2) from None
    except SettingsError as exc:  # not even parseable (e.g. NEKOFLOW_ONEBOT_BOTS is not JSON)
        err_console.print(escape(parse_error_line(exc)), soft_wrap=True)
        raise typer.Exit(2) from None


def onebot_gateway_command(
    port: Annotated[
        int | None, typer.Option("--port", help="Listen port (default NEKOFLOW_ONEBOT_WS_PORT)")
    ] = None,
    log_level: LogLevel = "INFO",
) -> None:
    """Accept OneBot v11 reverse WebSockets; events become turns, replies go back on the socket."""
    configure_logging(log_level)
    from nekoflow.platforms.onebot.gateway import OneBotGateway
    from nekoflow.redis_client import make_redis
    from nekoflow.settings import get_settings
    from nekoflow.storage import create_all, make_engine
    from nekoflow.taskqueue import task_queue

    settings = _settings_or_exit()
    if port is not None:
        settings = settings.model_copy(update={"ws_port": port})
    ws_bots = [b.self_id for b in settings.bots if b.mode == "ws"]
    if not ws_bots:
        err_console.print(
            "no reverse-WebSocket bot: set NEKOFLOW_ONEBOT_SELF_ID (or NEKOFLOW_ONEBOT_BOTS)"
        )
        raise typer.Exit(2)
    base = get_settings()
    engine = make_engine(base.database_url)
    preflight(engine, base.database_url, base.redis_url)  # replies wait in Redis streams
    create_all(engine)
    queue = task_queue()
    queue.get_deps()  # a broken model or flow setting stops here: one line naming it

    def submit(event: dict, self_id: str) -> object:
        return queue.enqueue_turn("qq", event, bot=self_id)

    gateway = OneBotGateway(
        engine, make_redis(base.redis_url), settings, submit, prefix=base.redis_prefix
    )

    def ready(bound: int) -> None:
        url = f"ws://{settings.ws_host}:{bound}{settings.ws_path}"
        console.print(
            f"OneBot gateway listening on {escape(url)} for bot(s) {escape(', '.join(ws_bots))}"
        )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await gateway.serve(stop, ready)

    asyncio.run(main())
