"""How a CLI command ends on bad input: one line on stderr naming the field, exit code 2."""

from __future__ import annotations

from typing import NoReturn

import typer

__all__ = ["fail"]


def fail(exc: Exception) -> NoReturn:
    """Print ``error: <message> (field: <field>)`` to stderr and exit with code 2."""
    field = getattr(exc, "field", None)
    typer.echo(f"error: {exc}" + (f" (field: {field})" if field else ""), err=True)
    raise typer.Exit(2)
