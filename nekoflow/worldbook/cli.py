"""``nekoflow worldbook import|export|list|delete|bind|unbind|test-match``: world books in the
configured database.

The database is ``NEKOFLOW_DATABASE_URL`` (see :func:`nekoflow.storage.get_engine`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from nekoflow.errors import InputError

if TYPE_CHECKING:
    from nekoflow.worldbook.cooldowns import CooldownState
    from nekoflow.worldbook.models import WorldBookRecallConfig
    from nekoflow.worldbook.store import WorldBookStore

# The database, the matcher and pydantic are imported by the command that runs, not on import:
# ``nekoflow worldbook --help`` must start fast.

worldbook_app = typer.Typer(
    name="worldbook",
    help="Import, export, list, delete, bind and test-match world books.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


def _fail(message: str, code: int = 1) -> typer.Exit:
    err_console.print(f"[red]{escape(message)}[/red]")
    return typer.Exit(code)


def _store() -> WorldBookStore:
    from nekoflow.storage import get_engine
    from nekoflow.worldbook.store import WorldBookStore

    return WorldBookStore(get_engine())


def turn_config() -> WorldBookRecallConfig:
    """The recall config a turn uses (budgets from NEKOFLOW_LLM_CONTEXT_WINDOW and friends)."""
    from nekoflow.settings import get_settings
    from nekoflow.worldbook.budgets import recall_config_of

    return recall_config_of(get_settings())


@worldbook_app.command("import")
def import_command(
    path: Annotated[Path, typer.Argument(help="world_books.json, SillyTavern World Info or card")],
    replace: Annotated[
        bool,
        typer.Option(
            help="Replace the stored book of the same id or name (else: error); a World Info "
            "a character's card links replaces that card's book."
        ),
    ] = False,
    name: Annotated[str, typer.Option(help="Book name for SillyTavern imports.")] = "",
    character: Annotated[
        list[str] | None,
        typer.Option(help="Bind the book to this character, id or name (repeatable)."),
    ] = None,
    global_: Annotated[
        bool, typer.Option("--global", help="Bind the book to every character.")
    ] = False,
    dry_run: Annotated[bool, typer.Option(help="Parse and report, write nothing.")] = False,
) -> None:
    """Import a file; everything or nothing is written, and unmapped fields are reported.

    A SillyTavern World Info file binds to no character (it never fires) unless --character or
    --global says, or a character's card links it by name.
    """
    from nekoflow.worldbook.importers import parse_import

    if character and global_:
        raise _fail("--character and --global exclude each other", code=2)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _fail(f"cannot read {path}: {exc}") from None
    bound = [_character(c)[1] for c in character or []]
    notes: list[str] = []
    try:
        report = parse_import(data, name=name, fallback_name=path.stem, config=turn_config())
        if not dry_run:
            from nekoflow.storage import get_engine
            from nekoflow.worldbook.admin import import_books

            outcome = import_books(
                get_engine(),
                report.books,
                replace=replace,
                world_info=report.source_format == "sillytavern_world_info",
                characters=[] if global_ else (bound or None),
            )
            notes = outcome.notes
    except InputError as exc:
        problems = getattr(exc, "problems", None)
        if not problems:
            raise _fail(f"import rejected, nothing written: {exc}") from None
        lines = [f"import rejected, nothing written ({len(problems)} problem(s)):"]
        lines += [f"  - {p}" for p in problems]
        if any("already" in p for p in problems):
            lines.append(
                f"to replace the stored book and all its entries, run "
                f"`nekoflow worldbook import {path} --replace` "
                "(or change the book's id and name in the file to keep both)"
            )
        raise _fail("\n".join(lines)) from None
    verb = "would import" if dry_run else "imported"
    console.print(
        f"{verb} {len(report.books)} book(s), {report.entry_count} entries "
        f"from {report.source_format}"
    )
    if dry_run:
        for book in report.books:
            console.print(
                f"  {escape(book.id)}  {escape(book.name)}  ({len(book.entries)} entries)"
            )
    else:
        for book in outcome.stored:
            console.print(
                f"  {escape(book.id)}  {escape(book.name)}  ({len(book.entries)} entries)"
            )
    for note in notes:
        console.print(f"  {escape(note)}")
    if report.warnings:
        console.print(f"[yellow]notes ({len(report.warnings)}):[/yellow]")
        for warning in report.warnings:
            console.print(f"  - {escape(warning)}")


@worldbook_app.command("delete")
def delete_command(book_id: Annotated[str, typer.Argument(help="The book id.")]) -> None:
    """Delete a book and all its entries."""
    store = _store()
    book = store.get(book_id)
    if book is None or not store.delete(book_id):
        raise _fail(f"no such world book: {book_id}")
    console.print(
        f"deleted book {escape(book_id)} {escape(book.name)} ({len(book.entries)} entries)"
    )


@worldbook_app.command("bind")
def bind_command(
    book_id: Annotated[str, typer.Argument(help="The book id.")],
    character: Annotated[str | None, typer.Argument(help="Character id or name.")] = None,
    global_: Annotated[
        bool, typer.Option("--global", help="Bind to every character instead.")
    ] = False,
) -> None:
    """Bind a book to a character (or --global: to every character) and enable it."""
    from nekoflow.storage import get_engine
    from nekoflow.worldbook.admin import bind

    if (character is None) == (not global_):
        raise _fail("name a CHARACTER or give --global (not both)", code=2)
    who = None if global_ else _character(character or "")[1]
    try:
        book = bind(get_engine(), book_id, who)
    except InputError as exc:
        raise _fail(str(exc)) from None
    console.print(f"book {escape(book.id)} {escape(book.name)}: {_bound(book)}")


@worldbook_app.command("unbind")
def unbind_command(
    book_id: Annotated[str, typer.Argument(help="The book id.")],
    character: Annotated[str | None, typer.Argument(help="Character id or name.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Unbind every character.")] = False,
) -> None:
    """Unbind a character (or --all); a book bound to nobody is disabled, never global."""
    from nekoflow.storage import get_engine
    from nekoflow.worldbook.admin import unbind

    if (character is None) == (not all_):
        raise _fail("name a CHARACTER or give --all (not both)", code=2)
    who = None
    if character is not None:  # a name stored on the book, or a known character's id/name
        book = _store().get(book_id)
        who = character if book and character in book.character_ids else _character(character)[1]
    try:
        book = unbind(get_engine(), book_id, who)
    except InputError as exc:
        raise _fail(str(exc)) from None
    console.print(f"book {escape(book.id)} {escape(book.name)}: {_bound(book)}")


def _bound(book: Any) -> str:
    """Who a book applies to, in words."""
    if not book.enabled:
        return (
            "disabled (bound to no character: never fires)"
            if not book.character_ids
            else (f"disabled (bound to {', '.join(book.character_ids)})")
        )
    return f"bound to {', '.join(book.character_ids)}" if book.character_ids else "every character"


@worldbook_app.command("export")
def export_command(
    output: Annotated[
        Path | None, typer.Argument(help="File to write (default: standard output).")
    ] = None,
    book: Annotated[list[str] | None, typer.Option(help="Only these book ids.")] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="world_books (the seed's file, default) or sillytavern (one book as "
            "SillyTavern World Info, or the card's character_book it came from).",
        ),
    ] = "world_books",
) -> None:
    """Export books as the seed's world_books.json, or one book as SillyTavern JSON."""
    if fmt not in ("world_books", "sillytavern"):
        raise _fail(f"--format must be world_books or sillytavern, got {fmt!r}", code=2)
    books = _store().list_all()
    if book:
        missing = sorted(set(book) - {b.id for b in books})
        if missing:
            raise _fail(f"no such world book: {', '.join(missing)}")
        books = [b for b in books if b.id in set(book)]
    from nekoflow.worldbook.formats import dump_world_books
    from nekoflow.worldbook.st_export import export_book

    if fmt == "sillytavern":
        if len(books) != 1:
            raise _fail("--format sillytavern exports one book: name it with --book ID", code=2)
        text = json.dumps(export_book(books[0]), ensure_ascii=False, indent=2)
    else:
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
    # Plain lines, never wrapped or cut: book ids stay whole and copyable (80 columns, pipes).
    for b in books:
        characters = ", ".join(b.character_ids) or ("(all)" if b.enabled else "(none)")
        typer.echo(
            f"{b.id}  {b.name}  {len(b.entries)} entries  "
            f"{'enabled' if b.enabled else 'disabled'}  characters: {characters}"
        )


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


def _character(given: str) -> tuple[str, str]:
    """A character given by id or name as (id, name); unknown ones stop with the known list."""
    from sqlmodel import Session, col, select

    from nekoflow.storage import get_engine
    from nekoflow.storage.dialogue import Role
    from nekoflow.turns.characters import resolve_role

    with Session(get_engine()) as s:
        role = resolve_role(s, given)
        if role is None or role.id is None:
            known = ", ".join(
                f"{rid} {name}"
                for rid, name in s.exec(select(Role.id, Role.name).order_by(col(Role.id)))
            )
            raise _fail(f"--character: no character {given!r} (known: {known or 'none'})", code=2)
        return str(role.id), role.name


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
    scope: Annotated[
        str | None,
        typer.Option(
            help="A conversation scope (e.g. qq:private:30009): scan what its next turn would — "
            "its history (the card's greeting for a new scope) and its cooldown / sticky / delay "
            "state from Redis (nothing is written). The character is the scope's latest unless "
            "--character names one."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the test-match JSON.")] = False,
) -> None:
    """Show which entries a message recalls (sources, keywords, score) and which were dropped."""
    from pydantic import ValidationError

    from nekoflow.worldbook.matcher import describe_recall
    from nekoflow.worldbook.models import WorldBookRecallContext

    messages = [
        {"role": r, "content": c}
        for r, c in _parse_pairs(recent or [], ":", "recent", "ROLE:CONTENT")
    ]
    scene_state: dict[str, Any] = {
        k: (v.split("|") if "|" in v else v) for k, v in _parse_pairs(scene or [], "=", "scene")
    }
    role_id, role_name = _character(character) if character else (None, None)
    if scope:
        view = _scope_view(scope, role_id)
        if view.role_id is None and not as_json:
            err_console.print(
                f"[yellow]{escape(scope)} has no turns yet: name --character to scan the "
                "greeting its first turn would write[/yellow]"
            )
        elif view.role_id is not None:
            role_id, role_name = str(view.role_id), view.role_name
        messages = [*view.messages, *messages]
    try:
        context = WorldBookRecallContext(
            latest_user_message=message,
            recent_messages=messages,
            scene=scene_state,
            character_id=role_name or "",
        )
    except ValidationError as exc:
        raise _fail(f"invalid input: {exc}", code=2) from None
    # Like a turn: a book bound to a character applies by its id or its name.
    outcome = describe_recall(
        context,
        _store().list_all(),
        character_id=role_id,
        config=turn_config(),
        cooldowns=_scope_state(scope) if scope else None,
    )
    matches, dropped = outcome["matches"], outcome["dropped"]
    if as_json:
        print(json.dumps({"success": True, **outcome}, ensure_ascii=False, indent=2))
        return
    if not matches:
        console.print("no entries matched")
    _print_matches(matches)
    if dropped:
        console.print(f"[yellow]matched but dropped ({len(dropped)}):[/yellow]")
        for d in dropped:
            console.print(
                f"  - {escape(d['entry_name'] or d['entry_id'])} ({escape(d['entry_id'])}) "
                f"in {escape(d['book_name'])}: {_reason(d)}"
            )
    for entry_id in outcome["regex_timeouts"]:
        console.print(f"[yellow]regex key timed out (no match): {escape(entry_id)}[/yellow]")


def _scope_view(scope: str, role_id: str | None) -> Any:
    """What the scope's next turn scans (its history, or the greeting of a new scope)."""
    from nekoflow.settings import get_settings
    from nekoflow.storage import get_engine
    from nekoflow.turns.lore_preview import scope_view

    try:
        return scope_view(
            get_engine(),
            scope,
            role_id=int(role_id) if role_id is not None else None,
            history_limit=get_settings().history_limit,
        )
    except InputError as exc:
        raise _fail(f"--{exc.field or 'scope'}: {exc}", code=2) from None


def _scope_state(scope: str) -> CooldownState:
    """The scope's timed-effect state, read from the Redis cooldown store."""
    from nekoflow.settings import get_settings

    settings = get_settings()
    if not settings.uses_redis_cooldowns:
        raise _fail(
            "--scope needs cooldowns in Redis (NEKOFLOW_COOLDOWN_BACKEND=redis, or a "
            "NEKOFLOW_REDIS_URL): in-process cooldowns live in the worker",
            code=2,
        )
    from nekoflow.redis_client import make_redis
    from nekoflow.worldbook.redis_cooldowns import RedisCooldowns

    try:
        client = make_redis(settings.redis_url, connect_timeout=2.0)
        return RedisCooldowns(client, prefix=settings.redis_prefix).snapshot(scope)
    except Exception as exc:  # redis errors: one clear line, no traceback
        raise _fail(f"cannot read the cooldowns of {scope!r} from Redis: {exc}") from None


def _reason(d: dict[str, Any]) -> str:
    reason = str(d["reason"]).replace("_", " ")
    if d.get("needed") is not None:
        reason += f" (needs {d['needed']} {d['unit']}, {d['available']} left in {d['budget']})"
    return reason


def _print_matches(matches: list[dict[str, Any]]) -> None:
    for n, m in enumerate(matches, 1):
        console.print(
            f"{n}. [bold]{escape(m['entry_name'])}[/bold] ({escape(m['entry_id'])}) "
            f"in {escape(m['world_book_name'])} — score {m['score']}"
        )
        console.print(f"   sources: {', '.join(m['trigger_sources'])}")
        console.print(f"   keywords: {escape(', '.join(m['matched_keywords']) or '-')}")
        if m.get("cut_to") is not None:
            console.print(f"   cut to {m['cut_to']} chars to fit the budget")
        if m.get("unknown_macros"):
            console.print(f"   unknown macros: {escape(', '.join(m['unknown_macros']))}")
        console.print(f"   {escape(m['content_preview'])}")
