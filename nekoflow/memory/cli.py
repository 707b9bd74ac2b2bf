"""``nekoflow memory list|show|forget``: inspect and forget a character's memories of a scope."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from nekoflow.cli_errors import fail

memory_app = typer.Typer(help="A character's long-term memories of a scope: list, show, forget.")

Character = Annotated[str, typer.Option("--character", help="Character id or name.")]
Scope = Annotated[str, typer.Option("--scope", help="Scope id (e.g. web:user:u1).")]


@memory_app.command("list")
def list_command(
    character: Character,
    scope: Scope,
    history: Annotated[bool, typer.Option(help="Also superseded (replaced) memories.")] = False,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
) -> None:
    """List a scope's memories, newest first."""
    from sqlmodel import Session

    from nekoflow.errors import InputError
    from nekoflow.memory.admin import list_memories
    from nekoflow.storage import get_engine

    with Session(get_engine()) as s:
        try:
            rows = list_memories(s, character, scope, history=history, limit=limit)
        except InputError as exc:
            fail(exc)
            return
    for m in rows:
        if as_json:
            typer.echo(json.dumps(m.model_dump(mode="json"), ensure_ascii=False))
            continue
        flags = f" superseded by #{m.superseded_by}" if m.superseded_by else ""
        head = f"#{m.id} {m.kind} imp {m.importance:.2f} used {m.access_count}x{flags}"
        typer.echo(head)
        typer.echo(f"    {(m.title + ': ') if m.title else ''}{m.content}".replace("\n", " "))
    if not rows and not as_json:
        typer.echo("no memories")


@memory_app.command("show")
def show_command(memory_id: Annotated[int, typer.Argument(help="Memory id.")]) -> None:
    """Show one memory with its use and history fields (JSON)."""
    from sqlmodel import Session

    from nekoflow.errors import InputError
    from nekoflow.memory.admin import get_memory
    from nekoflow.storage import get_engine

    with Session(get_engine()) as s:
        try:
            m = get_memory(s, memory_id)
        except InputError as exc:
            fail(exc)
            return
    typer.echo(json.dumps(m.model_dump(mode="json"), ensure_ascii=False, indent=2))


@memory_app.command("forget")
def forget_command(
    memory_id: Annotated[int, typer.Argument(help="Memory id.")],
    character: Character,
    scope: Scope,
) -> None:
    """Delete a memory for good (and the older facts it replaced)."""
    from sqlmodel import Session

    from nekoflow.errors import InputError
    from nekoflow.memory.admin import find_role, forget_memory, get_memory
    from nekoflow.storage import get_engine

    with Session(get_engine()) as s:
        try:
            role = find_role(s, character)
            m = get_memory(s, memory_id)
            if m.role_id != role.id or m.scope_id != scope:
                raise InputError(
                    f"memory {memory_id} is not one of {role.name}'s in scope {scope!r}",
                    field="memory_id",
                )
            n = forget_memory(s, memory_id)
        except InputError as exc:
            fail(exc)
            return
    typer.echo(f"forgot memory #{memory_id} ({n} row(s) deleted)")
