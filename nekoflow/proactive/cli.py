"""``nekoflow proactive list|cancel``: the messages the characters will start themselves."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from nekoflow.cli_errors import fail

proactive_app = typer.Typer(
    help="Proactive messages (follow-ups after silence, promised reminders): list, cancel."
)


@proactive_app.command("list")
def list_command(
    scope: Annotated[str | None, typer.Option(help="Only this scope id.")] = None,
    state: Annotated[
        str | None,
        typer.Option(help="due, firing, fired, cancelled, dropped or all (default: open)."),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=10000, help="At most this many.")] = 200,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
) -> None:
    """List proactive schedules, soonest first (the open ones unless --state says)."""
    from nekoflow.errors import InputError
    from nekoflow.proactive.admin import list_schedules
    from nekoflow.storage import get_engine

    try:
        rows = list_schedules(get_engine(), scope=scope, state=state, limit=limit)
    except InputError as exc:
        fail(exc)
        return
    for row in rows:
        if as_json:
            typer.echo(json.dumps(row.model_dump(mode="json"), ensure_ascii=False))
            continue
        what = f" {row.note}" if row.note else (f" #{row.n}" if row.kind == "follow_up" else "")
        why = f" ({row.reason})" if row.reason else ""
        typer.echo(
            f"{row.id}\t{row.due_at:%Y-%m-%d %H:%M}Z\t{row.state}{why}\t{row.kind}{what}"
            f"\t{row.scope_id}"
        )
    if not rows and not as_json:
        typer.echo("no proactive schedules")


@proactive_app.command("cancel")
def cancel_command(
    schedule_id: Annotated[int, typer.Argument(help="Schedule id (from `list`).")],
) -> None:
    """Cancel a due follow-up or reminder: it will not be sent."""
    from nekoflow.errors import InputError
    from nekoflow.proactive.admin import cancel_schedule
    from nekoflow.storage import get_engine

    try:
        row = cancel_schedule(get_engine(), schedule_id)
    except LookupError:
        fail(InputError(f"no proactive schedule {schedule_id}", field="schedule_id"))
        return
    except InputError as exc:
        fail(exc)
        return
    typer.echo(f"cancelled {row.id} ({row.kind} due {row.due_at:%Y-%m-%d %H:%M}Z)")
