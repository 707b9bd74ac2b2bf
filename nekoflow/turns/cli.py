"""``nekoflow turn`` (one message through the chain), ``nekoflow runs`` (recent turns) and
``nekoflow sweep`` (re-publish stuck turns).

``turn`` runs embedded (in-process worker, in-memory broker, the configured database) unless
``NEKOFLOW_BROKER_URL`` is set, in which case it enqueues to the real workers and waits.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from sqlmodel import Session

    from nekoflow.turns.deps import TurnDeps


class StatusChoice(StrEnum):
    """``--status`` values: TurnStatus's, kept here so ``--help`` imports no SQL layer (a test
    checks the two agree)."""

    queued = "queued"
    running = "running"
    done = "done"
    failed = "failed"
    skipped = "skipped"
    superseded = "superseded"


class _LazyConsole:
    """rich's Console, imported on first use (keeps ``--help`` fast)."""

    _console: Any = None

    def __getattr__(self, name: str) -> Any:
        if _LazyConsole._console is None:
            from rich.console import Console

            _LazyConsole._console = Console()
        return getattr(_LazyConsole._console, name)


console: Any = _LazyConsole()


def escape(text: str) -> str:
    """rich markup escaping (imported lazily)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


@contextmanager
def _runtime() -> Iterator[TurnDeps]:
    """Real workers when a broker is configured, else an embedded worker on the settings' DB."""
    from nekoflow.settings import get_settings
    from nekoflow.taskqueue import broker_configured, task_queue

    if broker_configured():
        from nekoflow.startup import check_broker, check_redis

        settings = get_settings()
        check_broker(settings.broker_url or "")  # before anything is written
        if settings.redis_configured:
            check_redis(settings.redis_url)
        yield task_queue().get_deps()
        return
    with task_queue().embedded_worker(get_settings()) as deps:
        yield deps


def _stages_done(s: Session, turn_ids: list[str]) -> dict[str, list[str]]:
    """The stages each turn has stored a result for, in chain order (one query)."""
    from sqlmodel import col, select

    from nekoflow.storage.turns import STAGES, TurnStage

    done: dict[str, set[str]] = {t: set() for t in turn_ids}
    if turn_ids:
        rows = s.exec(
            select(TurnStage.turn_id, TurnStage.stage).where(col(TurnStage.turn_id).in_(turn_ids))
        ).all()
        for turn_id, stage in rows:
            done[turn_id].add(stage)
    return {t: [st for st in STAGES if st in stages] for t, stages in done.items()}


def turn_command(
    message: Annotated[str, typer.Argument(help="What the user says.")],
    session: Annotated[str, typer.Option(help="Web session id (one conversation).")] = "cli",
    user: Annotated[str, typer.Option(help="User id.")] = "cli-user",
    name: Annotated[str, typer.Option(help="The user's display name.")] = "",
    character: Annotated[
        str | None, typer.Option(help="Character id or name (default: the first).")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the reply.")] = 120.0,
) -> None:
    """Send one message through the whole chain (as the Web channel) and print the reply."""
    from sqlmodel import Session, col, select

    from nekoflow.errors import NekoflowError
    from nekoflow.storage.dialogue import Role
    from nekoflow.turns.characters import resolve_role

    with _runtime() as deps:
        with Session(deps.engine) as s:
            if s.exec(select(Role.id).limit(1)).first() is None:
                console.print(
                    "[red]error:[/red] no character yet: add one with "
                    "`nekoflow character add NAME --profile ...` or "
                    "`nekoflow character import card.png`"
                )
                raise typer.Exit(2)
            if character and resolve_role(s, character) is None:
                names = ", ".join(s.exec(select(Role.name).order_by(col(Role.id))).all())
                console.print(
                    f"[red]error:[/red] --character: no character {escape(character)!r} "
                    f"(known: {escape(names)})"
                )
                raise typer.Exit(2)
        event: dict[str, Any] = {
            "session_id": session,
            "user_id": user,
            "display_name": name or user,
            "message": message,
            "message_id": uuid.uuid4().hex,
            "metadata": {"time": int(datetime.now(UTC).timestamp())},
        }
        if character:
            event["character_id"] = character
        from nekoflow.taskqueue import task_queue

        try:
            handle = task_queue().enqueue_turn("web", event)
        except NekoflowError as exc:
            console.print(f"[red]error:[/red] {escape(str(exc))}")
            raise typer.Exit(2) from None
        if handle.is_skipped:
            console.print(f"skipped: {escape(handle.reason or '')}")
            return
        try:
            messages = handle.wait(timeout=timeout)
        except TimeoutError as exc:
            console.print(f"[yellow]{escape(str(exc))}[/yellow] (see `nekoflow runs`)")
            raise typer.Exit(1) from None
        run = handle.run()
        assert run is not None
        for m in messages:
            console.print(escape(str(m.get("content", ""))))
        status = f"turn {run.turn_id} · {run.scope_id} · {run.status}"
        if run.reason:
            status += f" ({run.reason})"
        console.print(f"[dim]{escape(status)}[/dim]")
        if run.status == "failed":
            raise typer.Exit(1)


def _refs(refs: list[dict[str, Any]]) -> str:
    """``#12 0.93; summary #4`` — a prompt's memories by id and score (never text)."""
    parts = []
    for r in refs:
        score = r.get("score")
        kind = "" if r.get("kind", "fact") == "fact" else f"{r.get('kind')} "
        parts.append(f"{kind}#{r.get('id')}" + (f" {score:.2f}" if score is not None else ""))
    return "; ".join(parts)


def _chunks_not_sent(engine: Any, turn_ids: list[str]) -> dict[str, list[tuple[int, str, str]]]:
    """``(index, status, reason)`` of each reply chunk not plainly sent (unknown, failed…) of
    the given turns — what ``--json`` and the API sum up in ``delivery_reason``."""
    from nekoflow.delivery import outbox

    out: dict[str, list[tuple[int, str, str]]] = {}
    for turn_id in turn_ids:
        rows = [r for r in outbox.rows_for(engine, turn_id) if r.status != "sent"]
        out[turn_id] = [(r.idx, str(r.status), r.error or "") for r in rows]
    return out


def _delivery(status: str | None, not_sent: list[tuple[int, str, str]]) -> str:
    """The head line's delivery part: its status, ``(partial)`` when a chunk is not sent."""
    if not status:
        return ""
    return f"delivery {status} (partial)" if status == "sent" and not_sent else f"delivery {status}"


def runs_command(
    limit: Annotated[int, typer.Option(min=1, help="How many turns to show.")] = 20,
    scope: Annotated[str | None, typer.Option(help="Only this scope id.")] = None,
    status: Annotated[
        StatusChoice | None, typer.Option(help="Only turns with this status.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
) -> None:
    """List recent turns: status, stages done, model, latency, tokens, world-book entries."""
    import json

    from sqlmodel import Session, col, select

    from nekoflow.observability.turn_view import dropped_text, turn_inputs
    from nekoflow.proactive.turns import proactive_label
    from nekoflow.storage import get_engine
    from nekoflow.storage.turns import STAGES, TurnRun
    from nekoflow.turns import store

    engine = get_engine()
    with Session(engine) as s:
        query = select(TurnRun).order_by(col(TurnRun.created_at).desc()).limit(limit)
        if scope:
            query = query.where(TurnRun.scope_id == scope)
        if status:
            query = query.where(TurnRun.status == status.value)
        runs = list(s.exec(query).all())
        stages = _stages_done(s, [r.turn_id for r in runs])
    inputs = turn_inputs(engine, [r.turn_id for r in runs])
    if as_json:
        runs_by_turn = store.stage_runs(engine, [r.turn_id for r in runs])
        for r in runs:
            row = r.model_dump(
                mode="json", exclude={"request", "context", "rendered", "llm_lease_owner"}
            )
            row["proactive"] = proactive_label(r.request)
            row["stages"] = stages[r.turn_id]
            row["stage_runs"] = runs_by_turn[r.turn_id]
            row["injected"] = inputs[r.turn_id].injected
            row["dropped"] = inputs[r.turn_id].dropped
            row["memories"] = inputs[r.turn_id].memory_count
            row["memory_refs"] = inputs[r.turn_id].memory_refs
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    # One block per turn, plain lines that are never wrapped or cut: ids stay whole and
    # copyable at 80 columns and in pipes.
    chunks = _chunks_not_sent(engine, [r.turn_id for r in runs if r.delivery_reason])
    for r in runs:
        tokens = (
            f"tokens {r.prompt_tokens or 0}+{r.completion_tokens or 0}"
            if r.prompt_tokens is not None
            else ""
        )
        head = [
            r.turn_id,
            r.status,
            proactive_label(r.request) or "",
            r.created_at.strftime("%m-%d %H:%M:%S"),
            f"stages {len(stages[r.turn_id])}/{len(STAGES)}",
            r.llm_model or "",
            f"{r.llm_latency_ms:.0f} ms" if r.llm_latency_ms is not None else "",
            tokens,
            _delivery(r.delivery_status, chunks.get(r.turn_id, [])),
        ]
        typer.echo("  ".join(part for part in head if part))
        typer.echo(f"    scope {r.scope_id or '-'}")
        view = inputs[r.turn_id]
        if view.injected:
            entries = "; ".join(f"{e['id']} {e['name']}".strip() for e in view.injected)
            typer.echo(f"    world book: {entries}")
        if view.dropped:
            typer.echo(f"    world book dropped: {dropped_text(view.dropped)}")
        if view.memory_refs:
            typer.echo(f"    memories: {_refs(view.memory_refs)}")
        elif view.memory_count:
            typer.echo(f"    memories: {view.memory_count}")
        if r.reason:  # reasons are long: one line each, never cut
            typer.echo(f"    {r.status}: {r.reason}")
        if r.delivery_reason and r.delivery_status == "failed":
            typer.echo(f"    {r.turn_id} delivery failed: {r.delivery_reason}")
        elif r.delivery_reason:  # e.g. sent, but a chunk's arrival is unknown (never re-sent)
            typer.echo(f"    delivery {r.delivery_status}: {r.delivery_reason}")
        for idx, chunk_status, error in chunks.get(r.turn_id, []):
            typer.echo(f"    chunk {idx} {chunk_status}: {error or '-'}")
    if not runs:
        typer.echo("no turns yet")


def sweep_command() -> None:
    """Re-publish turns stuck past the lease (what the beat task does every interval)."""
    from nekoflow.taskqueue import task_queue

    queue = task_queue()
    republished = queue.republish_stuck()
    console.print(f"re-published {len(republished)} stuck turn(s)")
    deliveries = queue.republish_deliveries()
    if deliveries:
        console.print(f"re-published {len(deliveries)} stalled deliveries")
    for turn_id in republished:
        console.print(f"  {turn_id}")
