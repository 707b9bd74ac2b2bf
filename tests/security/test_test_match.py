"""``POST /api/world-books/test-match``: the token (or, with public reads, a rate limit), the
caller's config capped at the server's, the books from the turns' revision-keyed cache, no other
scope's cooldown state without the token, and NaN / 1e999 / lone surrogates answered 422."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlalchemy.engine import Engine

from nekoflow.worldbook import WorldBook, WorldBookEntry
from nekoflow.worldbook.store import WorldBookStore

URL = "/api/world-books/test-match"


def _chain(engine: Engine, depth: int = 7) -> None:
    """Entry k's content names entry k+1's keyword: each step of recursion activates one more."""
    entries = [
        WorldBookEntry(id=f"e{k}", keywords=[f"kw{k}x"], content=f"see kw{k + 1}x", priority=50)
        for k in range(depth)
    ]
    book = WorldBook(id="chain", name="chain", rules={"recursive_scanning": True}, entries=entries)
    WorldBookStore(engine).import_books([book])


def test_test_match_needs_the_token(make_client: Callable[..., TestClient], auth) -> None:  # type: ignore[no-untyped-def]
    client = make_client()
    r = client.post(URL, json={"message": "x"})
    assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer")
    assert client.post(URL, json={"message": "x"}, headers=auth).status_code == 200
    assert make_client(api_token=None).post(URL, json={"message": "x"}).status_code == 503


def test_public_reads_rate_limit_anonymous_calls(
    make_client: Callable[..., TestClient], auth
) -> None:  # type: ignore[no-untyped-def]
    client = make_client(api_public_reads=True, api_test_match_per_minute=2)
    codes = [client.post(URL, json={"message": "x"}).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    assert "without the token" in client.post(URL, json={"message": "x"}).json()["error"]
    # the token is never limited
    assert all(
        client.post(URL, json={"message": "x"}, headers=auth).status_code == 200 for _ in range(3)
    )


def test_another_scopes_cooldowns_need_the_token(
    make_client: Callable[..., TestClient], auth
) -> None:  # type: ignore[no-untyped-def]
    client = make_client(api_public_reads=True)
    r = client.post(URL, json={"message": "x", "scope_id": "qq:private:30009"})
    assert r.status_code == 401 and "scope_id" in r.json()["error"]
    ok = client.post(URL, json={"message": "x", "scope_id": "qq:private:30009"}, headers=auth)
    assert ok.status_code == 200


def test_the_callers_config_is_capped_at_the_servers(
    make_client: Callable[..., TestClient], auth, engine: Engine
) -> None:  # type: ignore[no-untyped-def]
    _chain(engine)
    client = make_client()
    body = {"message": "kw0x", "config": {"max_recursion_steps": 1000, "max_entries": 50}}
    hits = client.post(URL, json=body, headers=auth).json()["matches"]
    assert len(hits) == 4  # the entry the message names + the server's 3 recursion steps
    lower = {"message": "kw0x", "config": {"max_recursion_steps": 1, "max_entries": 50}}
    assert len(client.post(URL, json=lower, headers=auth).json()["matches"]) == 2


def test_books_come_from_the_revision_keyed_cache(
    make_client: Callable[..., TestClient], auth, engine: Engine
) -> None:  # type: ignore[no-untyped-def]
    """A second call with no book changed reads no entry rows (a 100,000-entry book is not
    reloaded per call); a write is seen by the next call."""
    _chain(engine)
    client = make_client()
    statements: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    body = {"message": "kw0x"}
    first = client.post(URL, json=body, headers=auth).json()
    entry_reads = [s for s in statements if "worldbook_entry" in s.lower()]
    statements.clear()
    again = client.post(URL, json=body, headers=auth).json()
    assert again == first
    assert [s for s in statements if "worldbook_entry" in s.lower()] == [], statements
    assert entry_reads  # the first call did read them
    new = WorldBookEntry(id="new", keywords=["kw0x"], content="n")
    WorldBookStore(engine).add_entry("chain", new)
    after = client.post(URL, json=body, headers=auth).json()
    assert "new" in {m["entry_id"] for m in after["matches"]}


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"message": "x", "config": {"regex_timeout": NaN}}', "config.regex_timeout"),
        ('{"message": "x", "config": {"regex_timeout": 1e999}}', "config.regex_timeout"),
        ('{"message": "x", "scene": {"mood": NaN}}', "scene.mood"),
        ('{"message": "x", "scene": {"mood": -1e999}}', "scene.mood"),
        ('{"message": "\\ud800 secret-text"}', "message"),
        (
            '{"message": "x", "recent_messages": [{"role": "user", "content": "\\udfff"}]}',
            "recent_messages.0.content",
        ),
    ],
)
def test_nan_infinity_and_lone_surrogates_are_422_naming_the_field(
    make_client: Callable[..., TestClient],
    auth,
    raw: str,
    field: str,
    caplog: pytest.LogCaptureFixture,
) -> None:  # type: ignore[no-untyped-def]
    client = make_client()
    headers = auth | {"Content-Type": "application/json"}
    with caplog.at_level(logging.DEBUG):
        r = client.post(URL, content=raw.encode(), headers=headers)
    assert r.status_code == 422, r.text
    assert field in r.json()["error"], r.json()
    assert "secret-text" not in caplog.text and "secret-text" not in r.text


def test_a_callers_regex_timeout_is_capped_at_the_servers(
    make_client: Callable[..., TestClient], auth, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The issue's CPU burn: ``regex_timeout: 12`` from the caller runs with the server's
    timeout (a lower one is kept)."""
    from nekoflow.api import worldbooks
    from nekoflow.worldbook.budgets import recall_config_of

    seen: list[float] = []
    real = worldbooks.describe_recall

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(args[3].regex_timeout)
        return real(*args, **kwargs)

    monkeypatch.setattr(worldbooks, "describe_recall", recording)
    client = make_client()
    server = recall_config_of(client.app.state.nekoflow.settings).regex_timeout  # type: ignore[attr-defined]
    for asked in (12.0, server / 2):
        body = {"message": "x", "config": {"regex_timeout": asked}}
        assert client.post(URL, json=body, headers=auth).status_code == 200
    assert seen == [server, server / 2]
