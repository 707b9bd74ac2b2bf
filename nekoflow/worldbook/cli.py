"""``nekoflow worldbook import|export|list|test-match``: world books in the configured database.

The database is ``NEKOFLOW_DATABASE_URL`` (see :func:`nekoflow.storage.get_engine`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nekoflow.errors import InputError
from nekoflow.storage import get_engine
from nekoflow.worldbook.formats import dump_world_books
from nekoflow.worldbook.importers import parse_import
from nekoflow.worldbook.matcher import describe_matches
from nekoflow.worldbook.models import WorldBookRecallContext
from nekoflow.worldbook.store import WorldBookStore

worldbook_app = typer.Typer(
    name="worldbook",
    help="Import, export, list and test-match world books.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


def _fail(message: str, code: int = 1) -> typer.Exit:
    err_console.print(f"[red]{escape(message)}[/red]")
    return typer.Exit(code)


def _store() -> WorldBookStore:
    return WorldBookStore(get_engine())


@worldbook_app.command("import")
def import_command(
    path: Annotated[Path, typer.Argument(help="world_books.json, SillyTavern World Info or card")],
    replace: Annotated[
        bool, typer.Option(help="Replace books whose id already exists (else: error).")
    ] = False,
    name: Annotated[str, typer.Option(help="Book name for SillyTavern imports.")] = "",
    dry_run: Annotated[bool, typer.Option(help="Parse and report, write nothing.")] = False,
) -> None:
    """Import a file; everything or nothing is written, and unmapped fields are reported."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _fail(f"cannot read {path}: {exc}") from None
    try:
        report = parse_import(data, name=name, fallback_name=path.stem)
        if not dry_run:
            _store().import_books(report.books, replace=replace)
    except InputError as exc:
        raise _fail(f"import rejected: {exc}") from None
    verb = "would import" if dry_run else "imported"
    console.print(
        f"{verb} {len(report.books)} book(s), {report.entry_count} entries "
        f"from {report.source_format}"
    )
    for book in report.books:
        console.print(f"  {escape(book.id)}  {escape(book.name)}  ({len(book.entries)} entries)")
    if report.warnings:
        console.print(f"[yellow]not mapped ({len(report.warnings)}):[/yellow]")
        for warning in report.warnings:
            console.print(f"  - {escape(warning)}")


@worldbook_app.command("export")
def export_command(
    output: Annotated[
        Path | None, typer.Argument(help="File to write (default: standard output).")
    ] = None,
    book: Annotated[list[str] | None, typer.Option(help="Only these book ids.")] = None,
) -> None:
    """Export books as the seed's world_books.json."""
    books = _store().list_all()
    if book:
        missing = sorted(set(book) - {b.id for b in books})
        if missing:
            raise _fail(f"no such world book: {', '.join(missing)}")
        books = [b for b in books if b.id in set(book)]
    text = json.dumps(dump_world_books(books), ensure_ascii=False, indent=2)
    if output is None or str(output) == "-":
        sys.stdout.write(text + "\n")
    else:
        output.write_text(text + "\n", encoding="utf-8")
        console.print(f"wrote {len(books)} book(s) to {output}")


@worldbook_app.command("list")
def list_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the stored world books."""
    books = _store().list_all()
    if as_json:
        rows = [
            {
                "id": b.id,
                "name": b.name,
                "entries": len(b.entries),
                "enabled": b.enabled,
                "character_ids": b.character_ids,
                "updated_at": b.updated_at,
            }
            for b in books
        ]
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not books:
        console.print("no world books")
        return
    table = Table(title="world books")
    for col in ("id", "name", "entries", "enabled", "characters"):
        table.add_column(col)
    for b in books:
        table.add_row(
            escape(b.id),
            escape(b.name),
            str(len(b.entries)),
            "yes" if b.enabled else "no",
            escape(", ".join(b.character_ids) or "(all)"),
        )
    console.print(table)


def _parse_pairs(
    items: list[str], sep: str, what: str, shape: str = "KEY{sep}VALUE"
) -> list[tuple[str, str]]:
    out = []
    for item in items:
        key, found, value = item.partition(sep)
        if not found or not key:
            raise _fail(f"--{what} must look like {shape.format(sep=sep)}, got {item!r}", code=2)
        out.append((key.strip(), value))
    return out


@worldbook_app.command("test-match")
def test_match_command(
    message: Annotated[str, typer.Argument(help="The user message.")],
    character: Annotated[str | None, typer.Option(help="Character id or name.")] = None,
    recent: Annotated[
        list[str] | None,
        typer.Option(help="A recent message as ROLE:CONTENT (repeatable, oldest first)."),
    ] = None,
    scene: Annotated[
        list[str] | None,
        typer.Option(help="Scene state as KEY=VALUE; VALUE a|b|c makes a list (repeatable)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the test-match JSON.")] = False,
) -> None:
    """Show which entries a message recalls, with their sources, keywords and score."""
    messages = [
        {"role": r, "content": c}
        for r, c in _parse_pairs(recent or [], ":", "recent", "ROLE:CONTENT")
    ]
    scene_state: dict[str, Any] = {
        k: (v.split("|") if "|" in v else v) for k, v in _parse_pairs(scene or [], "=", "scene")
    }
    try:
        context = WorldBookRecallContext(
            latest_user_message=message, recent_messages=messages, scene=scene_state
        )
    except ValidationError as exc:
        raise _fail(f"invalid input: {exc}", code=2) from None
    matches = describe_matches(context, _store().list_all(), character_id=character)
    if as_json:
        print(json.dumps({"success": True, "matches": matches}, ensure_ascii=False, indent=2))
        return
    if not matches:
        console.print("no entries matched")
        return
    for n, m in enumerate(matches, 1):
        console.print(
            f"{n}. [bold]{escape(m['entry_name'])}[/bold] ({escape(m['entry_id'])}) "
            f"in {escape(m['world_book_name'])} — score {m['score']}"
        )
        console.print(f"   sources: {', '.join(m['trigger_sources'])}")
        console.print(f"   keywords: {escape(', '.join(m['matched_keywords']) or '-')}")
        console.print(f"   {escape(m['content_preview'])}")
