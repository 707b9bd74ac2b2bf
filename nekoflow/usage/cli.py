"""``nekoflow usage``: tokens and cost by day, channel, character, scope, model or kind."""

from __future__ import annotations

import json
from datetime import date
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nekoflow.settings import get_settings
from nekoflow.storage import get_engine
from nekoflow.usage.store import GroupBy, usage_report

console = Console()


def usage_command(
    by: Annotated[
        str, typer.Option(help="Group by day, channel, character, scope, model or kind.")
    ] = "day",
    since: Annotated[str | None, typer.Option(help="First UTC day, YYYY-MM-DD.")] = None,
    until: Annotated[str | None, typer.Option(help="Last UTC day, YYYY-MM-DD.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
    speech: Annotated[
        bool, typer.Option("--speech", help="Voice replies: characters synthesized per provider.")
    ] = False,
) -> None:
    """Token usage as the LLM servers reported it (replies, reviews, re-reviews) and its cost;
    with ``--speech``, the characters synthesized for voice replies per provider and their cost."""
    if by not in ("day", "channel", "character", "scope", "model", "kind"):
        console.print(f"--by: expected day, channel, character, scope, model or kind; got {by!r}")
        raise typer.Exit(2)
    try:
        first = date.fromisoformat(since) if since else None
        last = date.fromisoformat(until) if until else None
    except ValueError:
        console.print("--since/--until: expected a day as YYYY-MM-DD")
        raise typer.Exit(2) from None
    if speech:
        _speech_usage(first, last, as_json)
        return
    group: GroupBy = by  # type: ignore[assignment]
    rows = usage_report(
        get_engine(), by=group, since=first, until=last, prices=get_settings().llm_prices
    )
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    table = Table()
    for name in (by, "calls", "estimated", "prompt", "completion", "total", "cost"):
        table.add_column(name, justify="left" if name == by else "right")
    for row in rows:
        cost = "—" if row["cost"] is None else f"{row['cost']:.4f}"
        table.add_row(
            escape(row[by]),
            str(row["calls"]),
            str(row["estimated_calls"]),
            str(row["prompt_tokens"]),
            str(row["completion_tokens"]),
            str(row["total_tokens"]),
            cost,
        )
    console.print(table)
    unpriced = sorted({m for row in rows for m in row["unpriced"]})
    if any(row["estimated_calls"] for row in rows):
        console.print(
            "estimated: calls whose model server sent no usage (a stream without it); "
            "their tokens are counted by nekoflow's estimate"
        )
    if unpriced:
        console.print(f"no price for: {escape(', '.join(unpriced))} (set NEKOFLOW_LLM_PRICES)")


def _speech_usage(first: date | None, last: date | None, as_json: bool) -> None:
    """The ``--speech`` report: one row per speech provider."""
    from nekoflow.speech.settings import get_speech_settings
    from nekoflow.speech.usage import speech_report

    rows = speech_report(get_engine(), since=first, until=last, prices=get_speech_settings().prices)
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    table = Table()
    names = ("provider", "lines", "synthesized", "cached", "failed", "chars", "hit rate", "cost")
    for name in names:
        table.add_column(name, justify="left" if name == "provider" else "right")
    for row in rows:
        rate = "—" if row["hit_rate"] is None else f"{row['hit_rate']:.0%}"
        cost = "—" if row["cost"] is None else f"{row['cost']:.4f}"
        values = [row[k] for k in ("lines", "synthesized", "cached", "failed", "chars")]
        table.add_row(escape(row["provider"]), *map(str, values), rate, cost)
    console.print(table)
    unpriced = sorted(r["provider"] for r in rows if r["cost"] is None)
    if unpriced:
        console.print(f"no price for: {escape(', '.join(unpriced))} (set NEKOFLOW_SPEECH_PRICES)")
