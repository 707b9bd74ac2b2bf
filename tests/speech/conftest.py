"""Speech tests run their in-process parts on SQLite only (the database adds nothing to what
they check; CI time is scarce); the real-worker module uses PostgreSQL when configured."""

from __future__ import annotations

import pytest


@pytest.fixture
def db_url(tmp_path) -> str:  # type: ignore[no-untyped-def]
    """A SQLite database for one test."""
    return f"sqlite:///{tmp_path / 'speech.db'}"
