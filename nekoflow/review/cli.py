"""``nekoflow review``: review one turn from the command line and print the result."""

from __future__ import annotations

from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nekoflow.events import RecordingEventBus
from nekoflow.review.models import ReviewInput
from nekoflow.review.timegap import real_time_context
from nekoflow.review.wiring import get_review_pipeline

console = Console()


def review_command(
    user_message: Annotated[str, typer.Argument(help="What the user said.")],
    assistant_message: Annotated[str, typer.Argument(help="What the character replied.")] = "",
    level: Annotated[
        str | None,
        typer.Option(help="Plot choice level: normal, important, turning_point, ending."),
    ] = None,
    choice: Annotated[str, typer.Option(help="Plot choice text.")] = "",
    previous: Annotated[
        str | None, typer.Option(help="Time of the previous turn (ISO-8601), for the gap.")
    ] = None,
    mode: Annotated[str | None, typer.Option(help="rule or llm (default: settings).")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the ReviewOutput as JSON.")
    ] = False,
) -> None:
    """Review one turn with the rule (or LLM) review and show deltas, memory and scores."""
    try:
        inp = ReviewInput(
            user_message=user_message,
            assistant_message=assistant_message,
            selected_choice={"level": level, "text": choice} if level else None,
            real_time_context=real_time_context(previous).to_dict() if previous else {},
        )
    except ValidationError as exc:
        console.print(f"[red]invalid input:[/red] {exc}")
        raise typer.Exit(2) from None
    if mode not in (None, "rule", "llm"):
        console.print(f"[red]--mode must be rule or llm, got {mode!r}[/red]")
        raise typer.Exit(2)
    bus = RecordingEventBus()
    out = get_review_pipeline(event_bus=bus, mode=mode).run(inp)  # type: ignore[arg-type]
    if as_json:
        print(out.model_dump_json(indent=2))
        return
    console.print(f"events: {' → '.join(bus.types)}")
    table = Table(title=f"review ({out.source}{', skipped' if out.skipped else ''})")
    table.add_column("what")
    table.add_column("value")
    if out.relationship_delta:
        d = out.relationship_delta
        table.add_row(
            "delta",
            f"affection {d.affection:+d}, trust {d.trust:+d}, familiarity {d.familiarity:+d}",
        )
    for item in out.memory_items:
        table.add_row(
            "memory", escape(f"[{item.mem_type}/{item.ttl}] {item.title} ({item.importance})")
        )
    if out.plot_update:
        table.add_row("plot", escape(f"{out.plot_update.level}: {out.plot_update.title}"))
    if out.world_book_update:
        table.add_row("world book", escape(out.world_book_update.entry_title))
    if out.scores:
        for name, value in out.scores.model_dump().items():
            table.add_row(name, f"{value:.2f}")
    if out.fallback_reason:
        table.add_row("fallback", escape(out.fallback_reason))
    console.print(table)
