"""The ``nekoflow`` command line (Typer): demo, and one sub-command group per part."""

from __future__ import annotations

import typer
from rich.console import Console

from nekoflow import __version__
from nekoflow.api.cli import serve_command
from nekoflow.characters.cli import character_app
from nekoflow.rereview.cli import rereview_command
from nekoflow.review.cli import review_command
from nekoflow.turns.cli import runs_command, sweep_command, turn_command
from nekoflow.worldbook.cli import worldbook_app

app = typer.Typer(
    name="nekoflow",
    help="Run role-play chatbot turns as a Celery workflow.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console()
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


if __name__ == "__main__":  # pragma: no cover
    app()
