"""Reads of turns, replies and scope ids are closed unless the operator opens them: without
``NEKOFLOW_API_TOKEN`` they answer 503, with it they need the token, and
``NEKOFLOW_API_PUBLIC_READS=true`` opens them."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient
from pydantic import SecretStr

from nekoflow.storage.dialogue import Role
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.runner import run_inline
from tests.api.conftest import web_event

SECRET_REPLY_MARK = "rendered"


def _a_done_turn(client: TestClient, auth: dict[str, str], deps: TurnDeps) -> str:
    r = client.post("/api/turns", json={"channel": "web", "event": web_event("你好")}, headers=auth)
    assert r.status_code == 202, r.text
    turn_id = r.json()["turn_id"]
    assert run_inline(deps, turn_id, sleep=False) == "ok"
    return turn_id


def _reads(turn_id: str) -> list[str]:
    return [
        f"/api/turns/{turn_id}",
        f"/api/turns/{turn_id}/events?timeout=1",
        "/runs",
        f"/runs/{turn_id}",
        "/runs?scope=web*",
    ]


def test_without_a_token_reads_are_closed(
    make_client: Callable[..., TestClient],
    auth: dict[str, str],
    turn_deps: TurnDeps,
    character: Role,
) -> None:
    turn_id = _a_done_turn(make_client(turn_deps=turn_deps), auth, turn_deps)
    closed = make_client(turn_deps=turn_deps, api_token=None)
    for url in _reads(turn_id):
        r = closed.get(url, follow_redirects=True)
        assert r.status_code == 503, (url, r.status_code, r.text[:200])
        assert "NEKOFLOW_API_TOKEN" in r.text and "NEKOFLOW_API_PUBLIC_READS" in r.text
        assert turn_id not in r.text.replace(f"/runs/{turn_id}", "")  # nothing of the turn
        assert "web:" not in r.text  # no scope id
    assert closed.get("/runs/login").status_code == 503


def test_with_a_token_reads_need_it(
    turn_client: TestClient, auth: dict[str, str], turn_deps: TurnDeps
) -> None:
    turn_id = _a_done_turn(turn_client, auth, turn_deps)
    for url in _reads(turn_id)[:2]:
        r = turn_client.get(url)
        assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer"), url
        wrong = turn_client.get(url, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401, url
    for url in _reads(turn_id)[2:]:
        r = turn_client.get(url, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"].startswith("/runs/login"), url
    body = turn_client.get(f"/api/turns/{turn_id}", headers=auth).json()
    assert body["status"] == "done" and body[SECRET_REPLY_MARK]
    assert turn_client.get("/runs", headers=auth).status_code == 200


def test_public_reads_open_them(
    make_client: Callable[..., TestClient],
    auth: dict[str, str],
    turn_deps: TurnDeps,
    character: Role,
) -> None:
    turn_id = _a_done_turn(make_client(turn_deps=turn_deps), auth, turn_deps)
    for token in (None, SecretStr("still-set-token-123")):
        public = make_client(turn_deps=turn_deps, api_token=token, api_public_reads=True)
        for url in _reads(turn_id):
            r = public.get(url)
            assert r.status_code == 200, (url, r.status_code, r.text[:200])
        assert public.get(f"/api/turns/{turn_id}").json()[SECRET_REPLY_MARK]
        # writes stay closed
        posted = public.post("/api/turns", json={"channel": "web", "event": web_event("x")})
        assert posted.status_code == (503 if token is None else 401)
