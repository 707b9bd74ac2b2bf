"""``nekoflow character add|list|import``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nekoflow.characters import add_character, import_card_report, list_characters
from nekoflow.characters.card import CardData
from nekoflow.characters.greetings import start_conversation
from nekoflow.errors import InputError
from nekoflow.storage import get_engine

if TYPE_CHECKING:
    from nekoflow.worldbook import WorldBookRecallConfig

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


def _turn_config() -> WorldBookRecallConfig:
    """The recall config a turn uses (NEKOFLOW_LLM_CONTEXT_WINDOW and friends): what the
    imported book's budget notes measure against, as ``worldbook import`` does."""
    from nekoflow.settings import get_settings
    from nekoflow.worldbook.budgets import recall_config_of

    return recall_config_of(get_settings())


@character_app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(help="A character card: .json or .png (V1/V2/V3).")],
    update: Annotated[
        bool,
        typer.Option(
            "--update",
            help="Replace the card of the character with this name (keeps its conversations).",
        ),
    ] = False,
) -> None:
    """Import a SillyTavern character card and its character book; print what was kept."""
    try:
        result = import_card_report(
            get_engine(), path.read_bytes(), update=update, config=_turn_config()
        )
    except OSError as exc:
        console.print(f"[red]error:[/red] cannot read {path}: {exc.strerror}")
        raise typer.Exit(2) from None
    except InputError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    role = result.role
    verb = "updated" if result.updated else "imported"
    console.print(f"{verb} character {role.id}: {escape(role.name)}")
    for status in ("kept", "mapped", "not used"):
        notes = [n for n in result.notes if n.status == status]
        if notes:
            console.print(f"[bold]{status}:[/bold]")
        for note in notes:
            extra = f" — {escape(note.note)}" if note.note else ""
            console.print(f"  {escape(note.field)}{extra}")
    empty = [n.field for n in result.notes if n.status == "empty"]
    if empty:
        console.print(f"[dim]empty: {escape(', '.join(empty))}[/dim]")
    if result.book is not None:
        n = len(result.book.entries)
        console.print(f"world book {escape(result.book.id)} with {n} entries")
    if result.removed_book:
        console.print(f"removed world book {escape(result.removed_book)} of the previous card")
    if result.warnings:  # the book import's report: fields reported, budgets, decorators…
        console.print(f"[yellow]world book notes ({len(result.warnings)}):[/yellow]")
    for warning in result.warnings:
        console.print(f"  - {escape(warning)}")


@character_app.command("show")
def show(name: Annotated[str, typer.Argument(help="The character's name.")]) -> None:
    """Show a character's card: its prompt fields and numbered greetings."""
    role = next((r for r in list_characters(get_engine()) if r.name == name.strip()), None)
    if role is None:
        console.print(f"[red]error:[/red] no character named {escape(name)!r}")
        raise typer.Exit(2)
    console.print(f"character {role.id}: {escape(role.name)}")
    if not role.card:
        console.print("no card (made with `character add`); profile:")
        console.print(escape(role.profile_prompt))
        return
    card = CardData.model_validate(role.card)
    console.print(f"spec {card.spec}, version {escape(card.character_version or '-')}")
    for field in ("system_prompt", "post_history_instructions", "mes_example"):
        value = getattr(card, field)
        console.print(f"{field}: {len(value)} chars" if value else f"{field}: —")
    if card.depth_prompt and card.depth_prompt.prompt.strip():
        dp = card.depth_prompt
        console.print(f"depth_prompt: depth {dp.depth} as {dp.role}, {len(dp.prompt)} chars")
    for n, greeting in enumerate(card.greetings()):
        label = "first_mes" if n == 0 else f"alternate_greetings[{n - 1}]"
        first_line = greeting.strip().splitlines()[0][:80] if greeting.strip() else "(empty)"
        console.print(f"greeting {n} ({label}): {escape(first_line)}")


@character_app.command("greet")
def greet(
    name: Annotated[str, typer.Argument(help="The character's name.")],
    scope: Annotated[str, typer.Option(help="Conversation scope, e.g. web:conversation:s1.")],
    index: Annotated[
        int, typer.Option("--index", "-i", help="Greeting number (0 = first_mes; see show).")
    ] = 0,
    user: Annotated[str, typer.Option(help="The user's name for {{user}}.")] = "",
) -> None:
    """Open a conversation with one of the card's greetings (before its first message)."""
    try:
        line, text = start_conversation(get_engine(), name, scope, index=index, user=user)
    except InputError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    if line is None:
        console.print(f"{escape(scope)} already has lines: its greeting is not changed")
        raise typer.Exit(1)
    console.print(f"{escape(scope)} starts with greeting {index}:")
    console.print(escape(text))
