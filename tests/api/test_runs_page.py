"""The runs page in a real headless Chromium (Debian's ``chromium``, driven by Playwright):
log in with the token, see turns with their stages, entries and failures, filter, follow links.

Skips only when no chromium executable is installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import importlib.util
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from nekoflow.api.app import create_app
from nekoflow.settings import Settings
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline
from nekoflow.worldbook import WorldBook, WorldBookEntry
from nekoflow.worldbook.store import WorldBookStore
from tests.conftest import REDIS_URL

REPO = Path(__file__).resolve().parents[2]
TOKEN = "runs-page-secret-token"
SECRET_TEXT = "我家的猫今天很乖"


def _turns_conftest() -> Any:
    spec = importlib.util.spec_from_file_location(
        "_turns_conftest_for_runs_page", REPO / "tests" / "turns" / "conftest.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_shared = _turns_conftest()
published = _shared.published
role = _shared.role
deps = _shared.deps

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def seed(deps) -> dict[str, str]:
    """A done Web turn with an injected entry and a failed QQ turn."""
    book = WorldBook(
        id="cat-cafe",
        name="猫咖",
        entries=[WorldBookEntry(id="cafe-rule", name="店规", keywords=["猫"], content="禁止喧哗")],
    )
    WorldBookStore(deps.engine).import_books([book])
    event = {"session_id": "page-session", "message": SECRET_TEXT, "user_id": "u1"}
    handle = submit_turn(deps, "web", event)
    assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
    failed = TurnRun(
        turn_id="f" * 32,
        channel="qq",
        scope_id="qq:group:424242",
        seq=1,
        status="failed",
        stage="llm_call",
        reason="LLM call failed after 4 attempt(s): APIConnectionError",
        created_at=utcnow() + timedelta(seconds=1),
        updated_at=utcnow() + timedelta(seconds=1),
    )
    with Session(deps.engine) as s:
        s.add(failed)
        s.commit()
    return {"done": handle.turn_id, "failed": "f" * 32}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def server(deps) -> Iterator[tuple[str, dict[str, str]]]:
    ids = seed(deps)
    settings = Settings(database_url=str(deps.engine.url), api_token=TOKEN, redis_url=REDIS_URL)
    app = create_app(settings, engine=deps.engine, turn_deps=deps)
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.started
    yield f"http://127.0.0.1:{port}", ids
    srv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def browser() -> Iterator[Any]:
    if CHROMIUM is None:
        pytest.skip("no chromium executable (apt-get install -y chromium; .ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def test_runs_page_logs_in_renders_filters_and_links(server, browser) -> None:
    base, ids = server
    page = browser.new_page()
    page.goto(f"{base}/runs?status=done")
    assert page.url.startswith(f"{base}/runs/login")  # reads need the token
    page.fill("#token", "wrong")
    page.click("#login")
    assert page.is_visible("#login-error")
    page.fill("#token", TOKEN)
    page.click("#login")
    # back on the filtered list it was sent from
    assert page.url == f"{base}/runs?status=done"
    rows = page.locator("#runs tbody tr")
    assert rows.count() == 1 and rows.first.get_attribute("data-turn") == ids["done"]

    page.click("#clear")
    assert page.locator("#runs tbody tr").count() == 2
    failed_row = page.locator(f'tr[data-turn="{ids["failed"]}"]')
    assert "LLM call failed after 4 attempt(s)" in failed_row.inner_text()
    done_row = page.locator(f'tr[data-turn="{ids["done"]}"]')
    text = done_row.inner_text()
    assert "6/6" in text and "scripted" in text and "店规" in text
    assert ids["done"] in text  # whole ids

    page.select_option("#f-status", "failed")
    page.click("#apply")
    assert [r.get_attribute("data-turn") for r in page.locator("#runs tbody tr").all()] == [
        ids["failed"]
    ]
    page.goto(f"{base}/runs")
    page.fill("#f-channel", "web")
    page.fill("#f-character", "钦灵")
    page.click("#apply")
    assert page.locator("#runs tbody tr").count() == 1
    page.fill("#f-character", "无名")
    page.click("#apply")
    assert page.locator("#runs tbody tr").count() == 0
    assert "no character named '无名'" in page.inner_text(".notice")

    page.goto(f"{base}/runs")
    page.click(f'tr[data-turn="{ids["done"]}"] a.turn-link')
    assert page.url == f"{base}/runs/{ids['done']}"
    assert page.inner_text("#status") == "done"
    stages = page.locator("#stages tbody tr")
    assert stages.count() == 6
    assert all(r.locator("td").nth(3).inner_text() == "1" for r in stages.all())
    assert "cafe-rule" in page.inner_text("#injected") and "店规" in page.inner_text("#injected")
    assert SECRET_TEXT not in page.content()  # never message text
    page.click("a.scope-link")
    assert page.url == f"{base}/runs?scope=web%3Aconversation%3Apage-session"
    assert page.locator("#runs tbody tr").count() == 1

    page.click("#logout")
    page.goto(f"{base}/runs")
    assert page.url.startswith(f"{base}/runs/login")


def test_reads_need_the_token_when_one_is_set(deps) -> None:
    seed(deps)
    settings = Settings(database_url=str(deps.engine.url), api_token=TOKEN, redis_url=REDIS_URL)
    with TestClient(create_app(settings, engine=deps.engine, turn_deps=deps)) as client:
        assert client.get("/runs", follow_redirects=False).status_code == 303
        assert client.get("/runs/" + "f" * 32, follow_redirects=False).status_code == 303
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert client.get("/runs", headers=bearer).status_code == 200
        bad = client.post(
            "/runs/login", data={"token": "nope", "next": "//evil.example/"}, follow_redirects=False
        )
        assert bad.status_code == 401
        ok = client.post(
            "/runs/login", data={"token": TOKEN, "next": "//evil.example/"}, follow_redirects=False
        )
        assert ok.headers["location"] == "/runs"  # no open redirect
        assert TOKEN not in ok.headers["set-cookie"]  # the cookie holds an HMAC, not the token
    closed = Settings(database_url=str(deps.engine.url))  # no token: reads are closed
    with TestClient(create_app(closed, engine=deps.engine, turn_deps=deps)) as client:
        assert client.get("/runs").status_code == 503
    public = Settings(database_url=str(deps.engine.url), api_public_reads=True)
    with TestClient(create_app(public, engine=deps.engine, turn_deps=deps)) as client:
        assert client.get("/runs").status_code == 200


def test_the_list_shows_why_a_reply_was_not_sent(deps) -> None:
    """A superseded turn's delivery is ``not_sent`` with its reason, in the list as on the turn
    page (the list showed the reason of ``failed`` deliveries only)."""
    seed(deps)
    with Session(deps.engine) as s:
        run = s.exec(select(TurnRun)).first()
        assert run is not None
        run.delivery_status, run.delivery_reason = "not_sent", "superseded"
        s.add(run)
        s.commit()
    settings = Settings(database_url=str(deps.engine.url), api_token=TOKEN, redis_url=REDIS_URL)
    with TestClient(create_app(settings, engine=deps.engine, turn_deps=deps)) as client:
        page = client.get("/runs", headers={"Authorization": f"Bearer {TOKEN}"}).text
    assert 'not_sent<div class="reason">superseded</div>' in page
