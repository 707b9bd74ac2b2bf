"""The routes that answer without ``NEKOFLOW_API_TOKEN``: the one list the README's "Security"
section mirrors and the route probe (``tests/security/test_route_probe.py``) checks every route
of the app against. Webhooks are not here: they answer only signed (or token-carrying) events."""

from __future__ import annotations

PUBLIC_ROUTES: frozenset[tuple[str, str]] = frozenset(
    {
        ("GET", "/healthz"),  # reachability of the database, Redis, broker; no paths or ids
        ("GET", "/metrics"),  # Prometheus series: counts and timings, no ids or text in labels
        ("GET", "/openapi.json"),
        ("GET", "/docs"),
        ("GET", "/docs/oauth2-redirect"),
        ("GET", "/redoc"),
        ("GET", "/api/world-books"),  # world books are the operator's lore, not users' data
        ("GET", "/api/world-books/{book_id}"),
        ("GET", "/api/world-books/{book_id}/entries"),
        ("GET", "/runs/login"),  # the login form
        ("POST", "/runs/logout"),
    }
)
"""``(method, path template)`` of every route that may answer 2xx without the token."""
