"""``nekoflow character add|list|import``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nekoflow.characters import add_character, import_card, list_characters
from nekoflow.errors import InputError
from nekoflow.storage import get_engine

character_app = typer.Typer(help="Characters (roles): add, list, import SillyTavern cards.")
console = Console()


def _pairs(values: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(
                f"expected NAME=VALUE, got {item!r}", param_hint="--relationship"
            )
        out[key.strip()] = value.strip()
    return out


@character_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="The character's name.")],
    profile: Annotated[str, typer.Option(help="Profile prompt (who the character is).")] = "",
    relationship: Annotated[
        list[str] | None,
        typer.Option("--relationship", "-r", help="Initial value, e.g. 好感=60 or trust=40."),
    ] = None,
) -> None:
    """Add a character."""
    try:
        role = add_character(
            get_engine(),
            name,
            profile=profile,
            relationship=_pairs(relationship or []),
            strict=True,
        )
    except InputError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    console.print(f"added character {role.id}: {escape(role.name)}")


@character_app.command("list")
def list_() -> None:
    """List characters with their initial relationship."""
    table = Table("id", "name", "relationship", "profile")
    for role in list_characters(get_engine()):
        rel = ", ".join(f"{k} {v}" for k, v in (role.initial_relationship or {}).items())
        table.add_row(str(role.id), escape(role.name), rel, escape(role.profile_prompt[:60]))
    console.print(table)


@character_app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(help="A character card: .json or .png (V2/V3).")],
) -> None:
    """Import a SillyTavern character card and its character book."""
    try:
        role, book, warnings = import_card(get_engine(), path.read_bytes())
    except OSError as exc:
        console.print(f"[red]error:[/red] cannot read {path}: {exc.strerror}")
        raise typer.Exit(2) from None
    except InputError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    console.print(f"imported character {role.id}: {escape(role.name)}")
    if book is not None:
        console.print(f"world book {escape(book.id)} with {len(book.entries)} entries")
    for warning in warnings:
        console.print(f"[yellow]not mapped:[/yellow] {escape(warning)}")
