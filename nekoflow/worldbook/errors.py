"""World-book errors: a missing book, and a rejected write/import listing every bad item."""

from __future__ import annotations

from nekoflow.errors import InputError


class WorldBookNotFoundError(InputError):
    """The world book named by ``book_id`` does not exist."""

    def __init__(self, book_id: str) -> None:
        super().__init__(f"world book {book_id!r} not found", field="book_id")
        self.book_id = book_id


class WorldBookDataError(InputError):
    """A batch or an import was rejected whole; ``problems`` names each bad book or entry."""

    def __init__(self, problems: list[str], *, field: str = "entries") -> None:
        super().__init__(
            f"rejected, nothing written ({len(problems)} problem(s)):\n  - "
            + "\n  - ".join(problems),
            field=field,
        )
        self.problems = problems
