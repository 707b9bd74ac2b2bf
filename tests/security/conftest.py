"""Security tests reuse the API fixtures: the real app on the test database and Redis."""

from __future__ import annotations

from tests.api.conftest import (  # noqa: F401 (fixtures)
    api_settings,
    auth,
    character,
    client,
    make_client,
    publisher,
    turn_client,
    turn_deps,
)
