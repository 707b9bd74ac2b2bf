"""``nekoflow rereview``: bulk re-review of historical conversations, with a live progress bar.

Creates a ``ReviewJob``, fans its batches out to the Celery ``review`` queue (or runs them in this
process when no broker is configured, or with ``--inline``), follows the job in the database, then
prints a summary and the per-scope relationship diff, applies it (``--apply``) and exports records.
"""

from __future__ import annotations

import shlex
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from nekoflow.errors import InputError
from nekoflow.rereview import store
from nekoflow.rereview.apply import ScopeDiff, apply_job, scope_diffs
from nekoflow.rereview.export import check_export_path, export_job
from nekoflow.rereview.runner import ReviewerSpec, run_inline
from nekoflow.review.models import RELATIONSHIP_DIMENSIONS
from nekoflow.settings import get_settings
from nekoflow.storage import get_engine
from nekoflow.storage.rereview import JobStatus, ReviewJob

console = Console()

MAX_DIFF_ROWS = 40


class RateColumn(ProgressColumn):
    """Turns per second, as rich estimates it from recent progress."""

    def render(self, task: Any) -> Text:
        """The current speed."""
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.0f} turns/s" if speed else "– turns/s", style="cyan")


def _broker_configured() -> bool:
    from nekoflow.taskqueue import broker_configured

    return broker_configured()


NO_WORKER_HINT_SECONDS = 15.0
"""After this long with no batch started on the workers, the follower says what may be missing."""

NO_WORKER_GIVE_UP_SECONDS = 120.0
"""After this long with no batch started on the workers, the follower stops waiting (resumable)."""


def resume_hint(job_id: int | None, *, export: Path | None, inline: bool | None) -> str:
    """The command that resumes ``job_id`` with the same output options (apply is kept by the
    job itself)."""
    parts = ["nekoflow", "rereview", "--resume", str(job_id)]
    if export is not None:
        parts += ["--export", shlex.quote(str(export))]
    if inline is True:
        parts.append("--inline")
    elif inline is False:
        parts.append("--workers")
    return " ".join(parts)


def follow(
    engine: Any,
    job_id: int,
    *,
    poll: float,
    runner: threading.Thread | None,
    resend: Callable[[list[int]], None] | None = None,
    stall_seconds: float = 120.0,
    give_up_seconds: float | None = None,
) -> store.Progress:
    """Show the job's progress (read from the database) until it is done or fails.

    With ``resend`` (worker mode), when no batch is running and none has finished for
    ``stall_seconds`` while some were never started, those are published again: a message the
    broker lost must not hang the job (batches are idempotent; a duplicate returns at once).
    When no worker has started any batch after ``give_up_seconds`` (default
    :data:`NO_WORKER_GIVE_UP_SECONDS`) it stops waiting and returns the still-running job.
    """
    give_up = NO_WORKER_GIVE_UP_SECONDS if give_up_seconds is None else give_up_seconds
    last_done, last_change = -1, time.monotonic()
    started, hinted = time.monotonic(), False
    columns = (
        TextColumn("[bold]job {task.fields[job]}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=False) as bar:
        p = store.progress(engine, job_id)
        task = bar.add_task("rereview", total=p.estimated_turns or 1, job=job_id)
        while True:
            p = store.progress(engine, job_id)
            if p.status == JobStatus.running and p.batches_done == p.batches:
                store.finish_if_complete(engine, job_id)  # belt and braces for lost finishes
                p = store.progress(engine, job_id)
            bar.update(task, completed=p.turns_done, total=max(p.estimated_turns, 1))
            if p.status != JobStatus.running:
                break
            if p.batches_failed and (runner is None or not runner.is_alive()):
                break
            if runner is not None and not runner.is_alive() and p.status == JobStatus.running:
                p = store.progress(engine, job_id)
                break
            if (
                resend is not None
                and not hinted
                and p.batches_running == 0
                and p.batches_done == 0
                and time.monotonic() - started > NO_WORKER_HINT_SECONDS
            ):
                hinted = True
                console.print(
                    "[yellow]no worker has started a batch yet: is `celery -A nekoflow.worker "
                    "worker -Q review` running against this broker? (--inline runs here instead)",
                    soft_wrap=True,  # never a line break inside the command
                )
            if (
                resend is not None
                and p.batches_running == 0
                and p.batches_done == 0
                and time.monotonic() - started > give_up
            ):
                console.print(
                    f"[red]no review worker started a batch in {give_up:.0f} s: stopped "
                    "waiting (the job stays queued and resumable)[/red]"
                )
                break
            if p.turns_done != last_done:
                last_done, last_change = p.turns_done, time.monotonic()
            elif (
                resend is not None
                and p.batches_running == 0
                and time.monotonic() - last_change > stall_seconds
            ):
                # Nothing running, nothing finishing, work left: those messages are gone.
                waiting = store.pending_batches(engine, job_id, only_pending=True)
                if waiting:
                    console.print(
                        f"[yellow]no progress for {stall_seconds:.0f} s: re-sending "
                        f"{len(waiting)} batch(es) no worker has started[/yellow]"
                    )
                    resend(waiting)
                last_change = time.monotonic()
            time.sleep(poll)
    return p


def _summary(engine: Any, job: ReviewJob) -> None:
    assert job.id is not None
    batches = store.done_batches(engine, job.id)
    keys = ("turns", "written", "skipped", "unanswered", "memories", "plots", "fallbacks")
    totals = {k: sum(getattr(b, k) for b in batches) for k in keys}
    table = Table(title=f"re-review job {job.id} ({job.mode}, {job.reviewer_version})")
    table.add_column("what")
    table.add_column("count", justify="right")
    labels = {
        "turns": "turns reviewed",
        "written": "records written",
        "skipped": "skipped (nothing worth keeping)",
        "unanswered": "user runs without a reply (not turns)",
        "memories": "memory writes",
        "plots": "plot nodes",
        "fallbacks": "LLM fallbacks to rules",
    }
    for k in keys:
        table.add_row(labels[k], f"{totals[k]:,}")
    console.print(table)
    per_role: dict[int, dict[str, int]] = defaultdict(
        lambda: dict.fromkeys(RELATIONSHIP_DIMENSIONS, 0)
    )
    for b in batches:
        for info in b.scopes.values():
            acc = per_role[info["role_id"]]
            for d in RELATIONSHIP_DIMENSIONS:
                acc[d] += info["totals"].get(d, 0)
    deltas = Table(title="delta totals per character")
    deltas.add_column("character")
    for d in RELATIONSHIP_DIMENSIONS:
        deltas.add_column(d, justify="right")
    names = _role_names(engine, set(per_role))
    for role_id, acc in sorted(per_role.items()):
        label = f"{names[role_id]} ({role_id})" if role_id in names else str(role_id)
        deltas.add_row(label, *(f"{acc[d]:+,}" for d in RELATIONSHIP_DIMENSIONS))
    console.print(deltas)
    if totals["skipped"]:
        console.print(
            f"skipped: {totals['skipped']:,} of {totals['turns']:,} turns were of low memory "
            "value (no memory written, no plot choice, no long absence); their relationship "
            "deltas still count in the totals above.",
            soft_wrap=True,
        )


def _role_names(engine: Any, ids: set[int]) -> dict[int, str]:
    """Character names by role id (for summaries)."""
    from sqlmodel import Session, col, select

    from nekoflow.storage.dialogue import Role

    if not ids:
        return {}
    with Session(engine) as s:
        rows = s.exec(select(Role.id, Role.name).where(col(Role.id).in_(ids))).all()
    return {rid: name for rid, name in rows if rid is not None}


def _diff_table(diffs: list[ScopeDiff], title: str) -> None:
    """The scopes whose relationship changes, biggest change first: plain lines, so scope ids
    and names stay whole at any width and in pipes."""

    def size(d: ScopeDiff) -> int:
        return sum(abs(d.new.get(k, 0) - d.old.get(k, 0)) for k in RELATIONSHIP_DIMENSIONS)

    changed = sorted((d for d in diffs if d.old != d.new), key=size, reverse=True)
    typer.echo(f"{title}: {len(changed)} of {len(diffs)} scopes change (old → new)")
    for d in changed[:MAX_DIFF_ROWS]:
        cells = [
            f"{k} {d.old.get(k)}→{d.new.get(k)}"
            for k in RELATIONSHIP_DIMENSIONS
            if d.old.get(k) != d.new.get(k)
        ]
        typer.echo(f"  {d.role_name} ({d.role_id})  {d.scope_id}")
        typer.echo(f"      {'  '.join(cells)}")
    if len(changed) > MAX_DIFF_ROWS:
        typer.echo(f"… {len(changed) - MAX_DIFF_ROWS} more (use --export for every turn)")


def rereview_command(
    character: Annotated[
        list[str] | None, typer.Option("--character", help="Role id or name (repeatable).")
    ] = None,
    scope: Annotated[
        list[str] | None, typer.Option("--scope", help="Scope id, * as wildcard (repeatable).")
    ] = None,
    channel: Annotated[
        list[str] | None, typer.Option("--channel", help="Channel, e.g. qq (repeatable).")
    ] = None,
    since: Annotated[
        datetime | None, typer.Option(help="Conversations active at or after this time.")
    ] = None,
    until: Annotated[
        datetime | None, typer.Option(help="Conversations started before this time.")
    ] = None,
    save: Annotated[list[int] | None, typer.Option("--save", help="Save id (repeatable).")] = None,
    mode: Annotated[str, typer.Option(help="rule or llm.")] = "rule",
    batch_size: Annotated[int, typer.Option(help="About this many turns per task.")] = 2000,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Review and show the diff; write no records.")
    ] = False,
    apply: Annotated[
        bool, typer.Option("--apply", help="Rewrite relationships, memories and plot nodes.")
    ] = False,
    export: Annotated[
        Path | None, typer.Option(help="Write the records to a .jsonl or .csv file.")
    ] = None,
    resume: Annotated[int | None, typer.Option(help="Resume this job id.")] = None,
    inline: Annotated[
        bool | None,
        typer.Option(
            "--inline/--workers",
            help="Run in this process / on Celery workers (default: workers when "
            "NEKOFLOW_BROKER_URL is set).",
        ),
    ] = None,
    poll: Annotated[float, typer.Option(help="Progress refresh interval (seconds).")] = 0.5,
) -> None:
    """Re-review historical conversations in bulk (rule or LLM review), optionally applying it."""
    if mode not in ("rule", "llm"):
        console.print(f"[red]--mode must be rule or llm, got {mode!r}[/red]")
        raise typer.Exit(2)
    if export is not None:
        try:
            check_export_path(export)  # before any work, not after a long LLM job
        except InputError as exc:
            console.print(f"[red]{exc}[/red]")
            raise typer.Exit(2) from None
    if dry_run and (apply or export):
        console.print("[red]--dry-run writes no records: it cannot --apply or --export[/red]")
        raise typer.Exit(2)
    settings = get_settings()
    engine = get_engine()
    try:
        if resume is not None:
            job = store.get_job(engine, resume)
            store.restart_job(engine, resume)
            apply = apply or job.apply
        else:
            filters = store.JobFilters(
                characters=character or [],
                scopes=scope or [],
                channels=channel or [],
                since=since,
                until=until,
                save_ids=save or [],
            )
            version = ReviewerSpec(mode=mode, settings=settings).version()
            job = store.create_job(
                engine,
                filters,
                mode=mode,
                version=version,
                batch_size=batch_size,
                dry_run=dry_run,
                apply=apply,
            )
    except InputError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    assert job.id is not None
    spec = ReviewerSpec(mode=job.mode, settings=settings)
    pending = store.pending_batches(engine, job.id)
    use_inline = inline if inline is not None else not _broker_configured()
    console.print(
        f"job {job.id}: {job.saves:,} conversations, ~{job.estimated_turns:,} turns, "
        f"{job.batches} batches ({len(pending)} to run, "
        f"{'in this process' if use_inline else 'on the review queue'}), "
        f"reviewer {job.reviewer_version}"
    )
    runner: threading.Thread | None = None
    stop = threading.Event()
    if pending and use_inline:

        def work() -> None:
            try:
                run_inline(engine, job.id or 0, pending, spec, stop)
            except Exception as exc:  # the batch is marked failed; the follower reports it
                console.print(f"[red]batch failed: {type(exc).__name__}: {exc}[/red]")

        runner = threading.Thread(target=work, name="rereview-inline", daemon=True)
        runner.start()
    resend: Callable[[list[int]], None] | None = None
    if pending and not use_inline:
        from nekoflow.taskqueue import task_queue

        job_id, job_mode = job.id, job.mode
        task_queue().dispatch_rereview(job_id, pending, job_mode)

        def resend(batches: list[int]) -> None:
            task_queue().dispatch_rereview(job_id, batches, job_mode)

    try:
        p = follow(engine, job.id, poll=poll, runner=runner, resend=resend)
    except KeyboardInterrupt:
        stop.set()
        hint = resume_hint(job.id, export=export, inline=inline)
        console.print(f"[yellow]interrupted: resume with `{hint}`", soft_wrap=True)
        raise typer.Exit(130) from None
    if p.status != JobStatus.done:
        console.print(
            f"[red]job {job.id} did not finish ({p.batches_done}/{p.batches} batches): "
            f"{p.error or 'stopped'}[/red]\nresume with "
            f"`{resume_hint(job.id, export=export, inline=inline)}`",
            soft_wrap=True,
        )
        raise typer.Exit(1)
    job = store.get_job(engine, job.id)
    _summary(engine, job)
    if apply and not job.dry_run:
        result = apply_job(engine, job, settings)
        _diff_table(result.diffs, "applied")
        console.print(
            f"applied {result.scopes} scopes: {result.relationships_changed} relationships "
            f"changed, memories +{result.memories_written}/-{result.memories_deleted}, "
            f"plot nodes +{result.plots_written}/-{result.plots_deleted}"
        )
    else:
        _diff_table(scope_diffs(engine, job), "diff (not applied: use --apply)")
    if export is not None:
        try:
            n = export_job(engine, job, export)
        except InputError as exc:
            console.print(f"[red]{exc}[/red]")
            raise typer.Exit(2) from None
        console.print(f"exported {n:,} records to {export}")
