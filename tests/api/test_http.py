"""HTTP-level answers shared by every route: 405 with the path's Allow, non-JSON bodies → 422."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_405_lists_the_methods_of_the_most_literal_path(client: TestClient) -> None:
    expected = {
        "/api/world-books": "GET, POST",
        "/api/world-books/test-match": "POST",
        "/api/world-books/b1": "DELETE, GET, PUT",
        "/api/world-books/b1/entries/batch": "POST",
        "/api/turns/abc": "GET",
    }
    for path, allow in expected.items():
        r = client.request("PATCH", path)
        assert r.status_code == 405 and r.headers["allow"] == allow, (path, r.headers)


def test_a_body_that_is_not_json_is_422(client: TestClient, auth: dict) -> None:
    headers = {**auth, "Content-Type": "application/json"}
    for path in ("/api/turns", "/api/web/chat", "/api/world-books"):
        r = client.post(path, content=b"\xff{", headers=headers)
        assert r.status_code == 422, (path, r.text)
        assert r.json()["detail"][0]["loc"][0] == "body"
