"""The ``nekoflow`` command line (Typer): demo, and one sub-command group per part."""

from __future__ import annotations

import re

import typer
from pydantic import ValidationError
from pydantic_settings import SettingsError
from rich.console import Console
from rich.markup import escape

from nekoflow import __version__
from nekoflow.api.cli import serve_command
from nekoflow.characters.cli import character_app
from nekoflow.errors import ConfigError
from nekoflow.rereview.cli import rereview_command
from nekoflow.review.cli import review_command
from nekoflow.turns.cli import runs_command, sweep_command, turn_command
from nekoflow.worldbook.cli import worldbook_app

app = typer.Typer(
    name="nekoflow",
    help="Run role-play chatbot turns as a Celery workflow.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals may hold API keys and message text
)
console = Console()
err_console = Console(stderr=True)
app.command("review")(review_command)
app.add_typer(worldbook_app, name="worldbook")
app.command("serve")(serve_command)
app.add_typer(character_app, name="character")
app.command("rereview")(rereview_command)
app.command("turn")(turn_command)
app.command("runs")(runs_command)
app.command("sweep")(sweep_command)


@app.command()
def version() -> None:
    """Print the nekoflow version."""
    console.print(__version__)


@app.command()
def demo() -> None:
    """Run a scripted role-play end to end (embedded: no services needed)."""
    from tasks.demo import run_demo

    run_demo(console)


def _setting_errors(exc: ValidationError) -> list[str]:
    """One line per bad setting, named as its environment variable."""
    lines = []
    for err in exc.errors():
        name = "_".join(str(p) for p in err.get("loc", ()) if not isinstance(p, int))
        got = err.get("input")
        shown = f" (got {got!r})" if isinstance(got, str | int | float) else ""
        lines.append(f"NEKOFLOW_{name.upper()}: {err.get('msg', 'invalid')}{shown}")
    return lines


def main() -> None:
    """The console entry point: the Typer app, with configuration errors as one clear line."""
    try:
        app()
    except ValidationError as exc:
        if exc.title != "Settings":
            raise
        for line in _setting_errors(exc):
            err_console.print(f"[red]invalid setting[/red] {escape(line)}")
        raise SystemExit(2) from None
    except SettingsError as exc:  # a value that is not even parseable (e.g. bad JSON)
        match = re.search(r'field "([^"]+)"', str(exc))
        name = f"NEKOFLOW_{match.group(1).upper()}" if match else "a NEKOFLOW_* variable"
        cause = f": {exc.__cause__}" if exc.__cause__ else ""
        err_console.print(f"[red]invalid setting[/red] {escape(name)} cannot be parsed{cause}")
        raise SystemExit(2) from None
    except ConfigError as exc:
        err_console.print(f"[red]configuration error:[/red] {escape(str(exc))}")
        raise SystemExit(2) from None


if __name__ == "__main__":  # pragma: no cover
    main()
