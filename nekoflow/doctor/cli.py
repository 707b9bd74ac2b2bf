"""``nekoflow doctor``: print one line per check (✓ or what to fix); exit 1 when any fails."""

from __future__ import annotations

import json
from typing import Annotated

import typer


def doctor_command(
    as_json: Annotated[bool, typer.Option("--json", help="The checks as JSON.")] = False,
    timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds each service may take to answer.")
    ] = 2.0,
) -> None:
    """Check the database, Redis, broker, queue consumers, beat, model and platform bots."""
    from nekoflow.doctor import run_checks

    checks = run_checks(timeout=timeout)
    if as_json:
        typer.echo(json.dumps([c.as_dict() for c in checks], ensure_ascii=False, indent=2))
    else:
        for check in checks:
            typer.echo(check.line())
    failing = [c.name for c in checks if not c.ok]
    if failing:
        if not as_json:
            typer.echo(f"{len(failing)} problem(s): {', '.join(failing)}", err=True)
        raise typer.Exit(1)
