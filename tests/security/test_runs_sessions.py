"""The runs page's login: an expiring, revocable session in Redis (not a fixed HMAC of the
token), throttled wrong tokens; and ``/healthz`` without the config file's path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import redis
from fastapi.testclient import TestClient
from pydantic import SecretStr

from nekoflow.api.runs_sessions import LOGIN_MAX_FAILURES, SESSION_SECONDS
from tests.api.conftest import TOKEN


def _login(client: TestClient, token: str = TOKEN) -> int:
    r = client.post("/runs/login", data={"token": token}, follow_redirects=False)
    return r.status_code


def test_a_session_is_random_expires_and_ends_on_log_out(
    client: TestClient, redis_client: redis.Redis
) -> None:
    assert _login(client) == 303
    first = client.cookies.get("nekoflow_runs")
    assert first and client.get("/runs", follow_redirects=False).status_code == 200
    keys = redis_client.keys("*runs-session*")
    assert len(keys) == 1 and 0 < redis_client.ttl(keys[0]) <= SESSION_SECONDS
    # a second login is another session: the cookie is no function of the token
    other = TestClient(client.app)
    assert _login(other) == 303 and other.cookies.get("nekoflow_runs") != first
    # log out revokes the session on the server: the old cookie no longer opens the page
    client.post("/runs/logout", follow_redirects=False)
    stolen = TestClient(client.app, cookies={"nekoflow_runs": first})
    assert stolen.get("/runs", follow_redirects=False).status_code == 303
    assert other.get("/runs", follow_redirects=False).status_code == 200


def test_a_new_token_ends_every_session(
    make_client: Callable[..., TestClient], client: TestClient
) -> None:
    assert _login(client) == 303
    cookie = client.cookies.get("nekoflow_runs")
    rotated = make_client(api_token=SecretStr("a-brand-new-token-456"))
    rotated.cookies.set("nekoflow_runs", cookie)
    assert rotated.get("/runs", follow_redirects=False).status_code == 303


def test_wrong_tokens_are_throttled(client: TestClient) -> None:
    codes = [_login(client, "wrong") for _ in range(LOGIN_MAX_FAILURES)]
    assert codes == [401] * LOGIN_MAX_FAILURES
    assert _login(client, "wrong") == 429
    assert _login(client) == 429  # even the right token waits out the window


def test_healthz_does_not_show_the_config_path(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    hidden = tmp_path / "operator-secret-dir"
    hidden.mkdir()
    for content in (None, "[channels]\n", "[[[ not ini"):
        path = hidden / "config.ini"
        if content is not None:
            path.write_text(content, encoding="utf-8")
        body = make_client(runtime_config_path=str(path)).get("/healthz").text
        assert "operator-secret-dir" not in body and str(tmp_path) not in body, body
