"""``nekoflow gateway feishu``: check each Feishu app, and hold the long connections.

For every app it fetches a tenant token and the bot's open_id (so mention detection works from
the first event; the open_id is cached in Redis for the API processes). Webhook-mode apps get
their request URL printed (events arrive at ``NEKOFLOW_FEISHU_EVENT_PATH``); apps with
``mode=long_connection`` (or every app with ``--long-connection``) are then connected to
Feishu's long connection, one WebSocket per app, until SIGTERM or Ctrl-C.
"""

from __future__ import annotations

import signal
import threading
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from nekoflow.platforms.feishu.settings import FeishuApp, FeishuSettings
from nekoflow.platforms.runtime import LogLevel, configure_logging, preflight_settings
from nekoflow.settings_errors import validation_lines

err_console = Console(stderr=True)
console = Console()


def _settings_or_exit(long_connection: bool = False) -> FeishuSettings:
    try:
        return FeishuSettings(mode="long_connection") if long_connection else FeishuSettings()
    except ValidationError as exc:  # one line per error naming the variable and field
        for line in validation_lines(exc, FeishuSettings):
            err_console.print(escape(line), soft_wrap=True)
        raise typer.Exit(2) from None


def _check(apps: list[FeishuApp], fs: FeishuSettings, base: Any, client: Any) -> bool:
    """Print each app's bot open_id (and request URL in webhook mode); False when one failed."""
    from nekoflow.delivery.base import DeliveryError
    from nekoflow.platforms.feishu.botinfo import resolve_bot_open_id

    ok = True
    for a in apps:
        try:
            open_id = resolve_bot_open_id(a, fs, base, client)
        except DeliveryError as exc:
            open_id = None
            err_console.print(f"[red]{escape(a.name)}[/red]: {escape(exc.reason)}")
        if open_id is None:
            ok = False
            err_console.print(f"[red]{escape(a.name)}[/red]: bot info unavailable (see log)")
            continue
        where = (
            "long connection"
            if a.mode == "long_connection"
            else f"request URL <public url>{escape(fs.event_path)}/{escape(a.name)}"
        )
        console.print(f"{escape(a.name)}: bot open_id {escape(open_id)}; {where}")
    return ok


def run_long_connections(apps: list[FeishuApp], fs: FeishuSettings, client: Any) -> int:
    """Hold one long connection per app until SIGTERM/Ctrl-C; the exit code (1: all gave up)."""
    from nekoflow.platforms.feishu.events import submit_event
    from nekoflow.platforms.feishu.longconn import FeishuLongConnection
    from nekoflow.taskqueue import task_queue

    get_deps = task_queue().get_deps
    stop = threading.Event()
    conns: list[FeishuLongConnection] = []
    threads: list[threading.Thread] = []
    for a in apps:

        def submit(payload: dict[str, Any], app: FeishuApp = a) -> object:
            return submit_event(get_deps(), app, fs, payload, redis_client=client)

        conn = FeishuLongConnection(
            a,
            submit,
            base_url=fs.api_base_url,
            timeout=fs.timeout,
            connect_timeout=fs.connect_timeout,
        )
        t = threading.Thread(target=conn.run, args=(stop,), name=f"feishu-{a.name}", daemon=True)
        conns.append(conn)
        threads.append(t)
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    for t in threads:
        t.start()
    console.print(
        f"Feishu long connection for app(s) {escape(', '.join(a.name for a in apps))}"
        " — Ctrl-C or SIGTERM to stop"
    )
    try:
        while any(t.is_alive() for t in threads) and not stop.is_set():
            stop.wait(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)
        signal.signal(signal.SIGTERM, previous)
    failed = [c for c in conns if c.error]
    for c in failed:
        err_console.print(f"[red]{escape(c.app.name)}[/red]: {escape(c.error or '')}")
    return 1 if failed and len(failed) == len(conns) else 0


def feishu_gateway_command(
    app: Annotated[
        list[str] | None, typer.Option("--app", help="App name (repeatable); default: all")
    ] = None,
    long_connection: Annotated[
        bool,
        typer.Option(
            "--long-connection",
            help="Receive events over the long connection for every selected app",
        ),
    ] = False,
    log_level: LogLevel = "INFO",
) -> None:
    """Check Feishu apps (tenant token, bot open_id); hold long connections for apps using them."""
    configure_logging(log_level)
    from nekoflow.settings import get_settings

    fs = _settings_or_exit(long_connection)
    unknown = sorted(set(app or []) - {a.name for a in fs.apps})
    if unknown:
        err_console.print(f"[red]unknown app[/red] {escape(', '.join(unknown))} (--app)")
        raise typer.Exit(2)
    apps = [a for a in fs.apps if not app or a.name in app]
    if not apps:
        err_console.print(
            "no Feishu app: set NEKOFLOW_FEISHU_APP_ID and _APP_SECRET, plus "
            "_VERIFICATION_TOKEN (webhook) or _MODE=long_connection (or NEKOFLOW_FEISHU_APPS)"
        )
        raise typer.Exit(2)
    if long_connection:
        apps = [a.model_copy(update={"mode": "long_connection"}) for a in apps]
    base = get_settings()
    client = None
    if base.redis_configured:
        from nekoflow.redis_client import make_redis

        client = make_redis(base.redis_url)
    ok = _check(apps, fs, base, client)
    connected = [a for a in apps if a.mode == "long_connection"]
    if not connected:
        console.print("no app in long-connection mode: events arrive at the request URL(s)")
        if not ok:
            raise typer.Exit(1)
        return
    preflight_settings(base)
    from nekoflow.taskqueue import task_queue

    task_queue().get_deps()  # a broken model or flow setting stops here: one line naming it
    code = run_long_connections(connected, fs, client)
    if code:
        raise typer.Exit(code)
