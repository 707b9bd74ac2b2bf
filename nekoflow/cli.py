"""The ``nekoflow`` command line (Typer): demo, and one sub-command group per part."""

from __future__ import annotations

import typer
from rich.console import Console

from nekoflow import __version__
from nekoflow.api.cli import serve_command
from nekoflow.review.cli import review_command
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


@app.command()
def version() -> None:
    """Print the nekoflow version."""
    console.print(__version__)


@app.command()
def demo() -> None:
    """Run a few turns end to end on embedded defaults (no services needed)."""
    console.print(
        "[yellow]not yet[/yellow]: the turn pipeline is not built yet. "
        'Today you can try the review pipeline: `nekoflow review "我好想你" "我也想你"`.'
    )


if __name__ == "__main__":  # pragma: no cover
    app()
