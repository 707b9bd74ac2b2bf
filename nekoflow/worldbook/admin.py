"""Managing stored world books as an operator does: import with replacement by name, bind and
unbind characters, delete — the operations ``nekoflow worldbook`` runs (the HTTP API's delete
and ``character_ids`` update are the same :class:`WorldBookStore` calls).

Binding: a book's ``character_ids`` name the characters it applies to; an empty list applies to
every character (a "global" book) — but only while the book is enabled. A SillyTavern World
Info file is active in SillyTavern only once it is selected globally or linked to a character,
so an imported one binds to nothing unless told: it is stored disabled until ``bind``.

A World Info file that a character card links (the card's ``extensions.world``) is that
character's own book: the card's import already stored its embedded copy (``character_book``).
Importing the file again is never a second book firing on every turn: without ``--replace`` it
is refused naming the book; with it the file's entries replace the card's book (which keeps its
id and stays bound to the character).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.errors import InputError
from nekoflow.storage.dialogue import Role
from nekoflow.worldbook.models import WorldBook
from nekoflow.worldbook.store import WorldBookStore


@dataclass
class ImportOutcome:
    """What :func:`import_books` did with each book (lines for the operator)."""

    stored: list[WorldBook] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CardLink:
    """A character whose card links a World Info book by name, and the book its import made."""

    character: str
    book_id: str | None


def card_links(engine: Engine) -> dict[str, CardLink]:
    """Linked World Info name (the card's ``extensions.world``) → the character and its book."""
    out: dict[str, CardLink] = {}
    with Session(engine) as s:
        for name, card in s.exec(select(Role.name, Role.card).order_by(col(Role.id))):
            card = card or {}
            world = (card.get("extensions") or {}).get("world")
            if isinstance(world, str) and world.strip():
                out.setdefault(world.strip(), CardLink(name, card.get("book_id")))
    return out


def _same_name(stored: Sequence[WorldBook], book: WorldBook) -> list[WorldBook]:
    """The stored books other than ``book``'s own id that carry its name."""
    return [b for b in stored if b.name == book.name and b.id != book.id]


def import_books(
    engine: Engine,
    books: Sequence[WorldBook],
    *,
    replace: bool = False,
    world_info: bool = False,
    characters: Sequence[str] | None = None,
) -> ImportOutcome:
    """Store imported ``books`` (all or nothing). A book whose id or name is stored already is
    an error naming it, unless ``replace``: then it takes that book's place (its id, and its
    binding unless ``characters`` is given). ``world_info``: SillyTavern World Info, bound to
    ``characters`` ([] = every character) or, when None, to nothing (stored disabled). A World
    Info a card links is that card's book (module docstring)."""
    store = WorldBookStore(engine)
    stored = store.list_all()
    by_id = {b.id: b for b in stored}
    links = card_links(engine)
    outcome = ImportOutcome()
    problems: list[str] = []
    prepared: list[WorldBook] = []
    for book in books:
        target: WorldBook | None = by_id.get(book.id)
        link = links.get(book.name)
        if target is None and link is not None and link.book_id in by_id:
            target = by_id[link.book_id]  # the card's own book, whatever its name
            if not replace:
                problems.append(
                    f"book {book.name!r} is the World Info that character {link.character!r} "
                    f"links (its card's extensions.world); the card's import stored it as "
                    f"book {target.id!r} already — run again with --replace to replace that "
                    "book's entries with this file (it stays bound to the character)"
                )
                continue
        if target is None:
            same = _same_name(stored, book)
            if len(same) > 1:
                ids = ", ".join(b.id for b in same)
                problems.append(
                    f"book {book.name!r}: {len(same)} stored books have this name ({ids}): "
                    "delete the extra ones (`nekoflow worldbook delete ID`) first"
                )
                continue
            if same:
                target = same[0]
                if not replace:
                    problems.append(
                        f"book {book.name!r}: a book of that name is stored already "
                        f"({target.id}): --replace replaces it"
                    )
                    continue
        if target is not None and target.id == book.id and not replace:
            problems.append(
                f"book {book.id!r}: already exists (--replace overwrites it; or change the "
                "book id in the file to keep both)"
            )
            continue
        copy = book.model_copy(deep=True)
        if target is not None:
            copy.id = target.id
            copy.character_ids, copy.enabled = list(target.character_ids), target.enabled
            why = f"linked by character {link.character!r}" if link else "same name"
            if by_id.get(book.id) is target:
                why = "same id"
            outcome.notes.append(f"replaced book {target.id} {target.name!r} ({why})")
        if characters is not None:
            copy.character_ids, copy.enabled = list(characters), True
        elif target is None and link is not None:  # the World Info a card links: its character's
            copy.character_ids, copy.enabled = [link.character], True
            outcome.notes.append(
                f"book {copy.id} {copy.name!r} is bound to {link.character!r} (its card links it)"
            )
        elif target is None and world_info:
            copy.character_ids, copy.enabled = [], False
            outcome.notes.append(
                f"book {copy.id} {copy.name!r} is bound to no character, so it never fires: "
                f"`nekoflow worldbook bind {copy.id} CHARACTER` (or --global for every one)"
            )
        prepared.append(copy)
    if problems:
        from nekoflow.worldbook.errors import WorldBookDataError

        raise WorldBookDataError(problems, field="world_books")
    outcome.stored = store.import_books(prepared, replace=True)
    return outcome


def bind(engine: Engine, book_id: str, character: str | None) -> WorldBook:
    """Bind ``book_id`` to ``character`` (None: to every character) and enable it."""
    store = WorldBookStore(engine)
    book = _get(store, book_id)
    ids = [] if character is None else list(dict.fromkeys([*book.character_ids, character]))
    return store.update(book_id, character_ids=ids, enabled=True)  # type: ignore[return-value]


def unbind(engine: Engine, book_id: str, character: str | None) -> WorldBook:
    """Unbind ``character`` (None: every character) from ``book_id``; a book left bound to
    nobody is disabled — never silently global."""
    store = WorldBookStore(engine)
    book = _get(store, book_id)
    if character is not None and character not in book.character_ids:
        bound = ", ".join(book.character_ids) or "no character"
        raise InputError(
            f"book {book_id!r} is not bound to {character!r} (bound to {bound})", field="character"
        )
    ids = [] if character is None else [c for c in book.character_ids if c != character]
    return store.update(book_id, character_ids=ids, enabled=bool(ids))  # type: ignore[return-value]


def _get(store: WorldBookStore, book_id: str) -> WorldBook:
    """The stored book ``book_id``, or an error naming it."""
    book = store.get(book_id)
    if book is None:
        raise InputError(f"no such world book: {book_id}", field="book")
    return book
