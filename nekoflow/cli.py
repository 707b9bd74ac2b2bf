"""The ``nekoflow`` command line (Typer): demo, and one sub-command group per part."""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:  # annotations only: Typer ≥ 0.26 runs on its own copy of Click
    import click

from nekoflow import __version__

LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "review": (
        "nekoflow.review.cli:review_command",
        "Review one turn with the rule (or LLM) review and show deltas, memory and scores.",
    ),
    "worldbook": (
        "nekoflow.worldbook.cli:worldbook_app",
        "Import, export, list and test-match world books.",
    ),
    "serve": (
        "nekoflow.api.cli:serve_command",
        "Serve the HTTP API (world books, turns, Web chat, runs page, metrics, health).",
    ),
    "character": (
        "nekoflow.characters.cli:character_app",
        "Characters (roles): add, list, import SillyTavern cards.",
    ),
    "rereview": (
        "nekoflow.rereview.cli:rereview_command",
        "Re-review historical conversations in bulk (rule or LLM review), optionally applying it.",
    ),
    "turn": (
        "nekoflow.turns.cli:turn_command",
        "Send one message through the whole chain (as the Web channel) and print the reply.",
    ),
    "runs": (
        "nekoflow.turns.cli:runs_command",
        "List recent turns: status, stages done, model, latency, tokens, world-book entries.",
    ),
    "sweep": (
        "nekoflow.turns.cli:sweep_command",
        "Re-publish turns stuck past the lease (what the beat task does every interval).",
    ),
    "usage": (
        "nekoflow.usage.cli:usage_command",
        "Token usage as the LLM servers reported it (replies, reviews, re-reviews) and its cost; "
        "--speech: characters synthesized for voice replies per provider.",
    ),
    "memory": (
        "nekoflow.memory.cli:memory_app",
        "A character's long-term memories of a scope: list, show, forget.",
    ),
    "doctor": (
        "nekoflow.doctor.cli:doctor_command",
        "Check every part of the deployment: one line each, ✓ or what to fix (exit 1 if any).",
    ),
    "proactive": (
        "nekoflow.proactive.cli:proactive_app",
        "Proactive messages (follow-ups after silence, promised reminders): list, cancel.",
    ),
    "gateway": (
        "nekoflow.cli:gateway_app",
        "Platform gateways: processes that hold a platform connection (polling, sockets).",
    ),
}
"""Sub-commands imported only when used (name → ``module:attribute``, one-line help), so
``nekoflow --help`` and ``nekoflow version`` start without importing the whole package."""

GATEWAY_COMMANDS: dict[str, tuple[str, str]] = {
    "telegram": (
        "nekoflow.platforms.telegram.cli:telegram_gateway_command",
        "Long-poll Telegram (getUpdates, offset kept in SQL) for polling-mode bots.",
    ),
    "onebot": (
        "nekoflow.platforms.onebot.cli:onebot_gateway_command",
        "Accept OneBot v11 reverse WebSockets; events become turns, replies go back on the socket.",
    ),
    "qqbot": (
        "nekoflow.platforms.qqbot.cli:qqbot_gateway_command",
        "Connect gateway-mode QQ bots to the QQ gateway (identify, heartbeat, resume).",
    ),
    "feishu": (
        "nekoflow.platforms.feishu.cli:feishu_gateway_command",
        "Check Feishu apps, print their event URLs; run long-connection apps' WebSockets.",
    ),
}


def _load(name: str, target: str) -> click.Command:
    """Import ``module:attribute`` and turn it (a Typer app or a command function) into a
    click command named ``name``."""
    module, attr = target.split(":")
    obj: Any = getattr(importlib.import_module(module), attr)
    if isinstance(obj, typer.Typer):
        command = typer.main.get_command(obj)
    else:
        single = typer.Typer(add_completion=False)
        single.command(name)(obj)
        command = typer.main.get_command(single)
    command.name = name
    return command


class LazyGroup(TyperGroup):
    """A Typer group whose sub-commands of :attr:`lazy` are imported on first use; listing
    them (``--help``) uses their one-line help and imports nothing."""

    lazy: dict[str, tuple[str, str]] = LAZY_COMMANDS
    _listing = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Eager commands, then the lazy ones, in declaration order."""
        return [*super().list_commands(ctx), *(n for n in self.lazy if n not in self.commands)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command, importing a lazy one unless only its help line is needed."""
        if cmd_name in self.commands or cmd_name not in self.lazy:
            return super().get_command(ctx, cmd_name)
        target, help_line = self.lazy[cmd_name]
        if self._listing:
            return TyperCommand(cmd_name, help=help_line, short_help=help_line)
        command = _load(cmd_name, target)
        self.commands[cmd_name] = command
        return command

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The group's help, listing lazy sub-commands without importing them."""
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


class GatewayGroup(LazyGroup):
    """``nekoflow gateway``: the platform gateways, each imported when used."""

    lazy = GATEWAY_COMMANDS


app = typer.Typer(
    name="nekoflow",
    cls=LazyGroup,
    help="Run role-play chatbot turns as a Celery workflow.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals may hold API keys and message text
    # The top-level help is plain Click: Typer's rich help imports rich.markdown (~0.1 s), and
    # ``nekoflow --help`` must start fast. Sub-commands keep the rich help.
    rich_markup_mode=None,
)
gateway_app = typer.Typer(
    cls=GatewayGroup,
    help="Platform gateways: processes that hold a platform connection (polling, sockets).",
    no_args_is_help=True,
    add_completion=False,
)


@gateway_app.callback()
def _gateway() -> None:
    """Platform gateways: processes that hold a platform connection (polling, sockets)."""


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr)


@app.command()
def version() -> None:
    """Print the nekoflow version."""
    typer.echo(__version__)


@app.command()
def demo() -> None:
    """Run a scripted role-play end to end (embedded: no services needed)."""
    from nekoflow.taskqueue import task_queue

    task_queue().run_demo(_console())


def error_lines(exc: BaseException) -> list[str] | None:
    """What to print for a configuration or connection error (None: not one of those).

    Only classes of modules already imported are checked, so this imports nothing.
    """
    from nekoflow import settings_errors
    from nekoflow.errors import ConfigError
    from nekoflow.startup import StartupError, connection_error

    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(exc, pydantic.ValidationError):
        cls = settings_errors.settings_class(exc.title)  # any NEKOFLOW_* settings class
        return None if cls is None else settings_errors.validation_lines(exc, cls)
    settings_mod = sys.modules.get("pydantic_settings")
    if settings_mod is not None and isinstance(exc, settings_mod.SettingsError):
        return [settings_errors.parse_error_line(exc)]
    if isinstance(exc, StartupError):
        return [str(exc)]
    if isinstance(exc, ConfigError):
        return [f"configuration error: {exc}"]
    line = connection_error(exc)
    return [line] if line else None


def main() -> None:
    """The console entry point: the Typer app, with configuration and connection errors as one
    clear line naming the variable."""
    try:
        app()
    except Exception as exc:
        lines = error_lines(exc)
        if lines is None:
            raise
        for line in lines:
            print(f"error: {line}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":  # pragma: no cover
    main()
