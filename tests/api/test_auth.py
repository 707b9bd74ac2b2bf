"""Bearer-token auth on write endpoints, open reads, and CORS (off unless configured)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from nekoflow.api.deps import token_matches
from nekoflow.settings import Settings

WRITES = [
    ("POST", "/api/world-books", {"name": "n"}),
    ("PUT", "/api/world-books/b", {"name": "n"}),
    ("DELETE", "/api/world-books/b", None),
    ("POST", "/api/world-books/b/entries", {"name": "e"}),
    ("PUT", "/api/world-books/b/entries/e", {"name": "e"}),
    ("DELETE", "/api/world-books/b/entries/e", None),
    ("POST", "/api/world-books/b/entries/batch", {"entries": [{"name": "e"}]}),
    ("POST", "/api/world-books/b/ai-generate", {}),
]


@pytest.mark.parametrize(("method", "url", "body"), WRITES)
def test_writes_need_the_token(
    client: TestClient, auth: dict[str, str], method: str, url: str, body: dict | None
) -> None:
    missing = client.request(method, url, json=body)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer"
    assert missing.json()["success"] is False
    wrong = client.request(method, url, json=body, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and "invalid" in wrong.json()["error"]
    basic = client.request(method, url, json=body, headers={"Authorization": "Basic dTpw"})
    assert basic.status_code == 401
    # with the token the request gets past auth (create → 201; others: book "b" is unknown)
    expected = 201 if url == "/api/world-books" else 404
    assert client.request(method, url, json=body, headers=auth).status_code == expected


def test_auth_is_checked_before_the_body(client: TestClient) -> None:
    r = client.post("/api/world-books", json={"name": 5})
    assert r.status_code == 401


def test_book_reads_are_open_and_test_match_needs_the_token(client: TestClient) -> None:
    assert client.get("/api/world-books").status_code == 200
    assert client.get("/api/world-books/b").status_code == 404
    assert client.get("/api/world-books/b/entries").status_code == 404
    assert client.post("/api/world-books/test-match", json={"message": "x"}).status_code == 401
    assert client.get("/healthz").status_code == 200


@pytest.mark.parametrize("token", [None, SecretStr(""), SecretStr("   ")])
def test_writes_are_refused_when_no_token_is_configured(
    make_client: Callable[..., TestClient], token: SecretStr | None
) -> None:
    client = make_client(api_token=token)
    r = client.post("/api/world-books", json={"name": "n"}, headers={"Authorization": "Bearer x"})
    assert r.status_code == 503
    assert "NEKOFLOW_API_TOKEN not configured" in r.json()["error"]
    assert client.get("/api/world-books").json() == []


def test_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEKOFLOW_API_TOKEN", "from-env")
    monkeypatch.setenv("NEKOFLOW_API_CORS_ORIGINS", '["https://app.example"]')
    settings = Settings()
    assert settings.api_token is not None
    assert settings.api_token.get_secret_value() == "from-env"
    assert "from-env" not in repr(settings)
    assert settings.api_cors_origins == ["https://app.example"]


def test_token_matches() -> None:
    assert token_matches("abc", "abc")
    assert not token_matches("abc", "abd")
    assert not token_matches("ab", "abc")
    assert token_matches("猫猫", "猫猫")


def test_cors_is_off_by_default(client: TestClient) -> None:
    r = client.get("/api/world-books", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in r.headers
    pre = client.options(
        "/api/world-books",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in pre.headers


def test_cors_allows_configured_origins(make_client: Callable[..., TestClient]) -> None:
    client = make_client(api_cors_origins=["https://app.example"])
    ok = client.get("/api/world-books", headers={"Origin": "https://app.example"})
    assert ok.headers["access-control-allow-origin"] == "https://app.example"
    pre = client.options(
        "/api/world-books",
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "Authorization, Content-Type",
        },
    )
    assert pre.status_code == 200
    assert pre.headers["access-control-allow-origin"] == "https://app.example"
    other = client.get("/api/world-books", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers
