"""Streamed calls and token usage, against the loopback OpenAI-compatible server: the usage is
asked for (``stream_options.include_usage``) and recorded exactly when sent; a server that
sends none gets estimated counts, marked estimated in the usage ledger, ``nekoflow usage`` and
``GET /api/usage``; a server refusing ``stream_options`` (HTTP 400) is asked again without it,
once, and never again; a database made before the ``estimated`` column gets it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import inspect, text
from sqlmodel import Session, select
from typer.testing import CliRunner

from nekoflow.api import create_app
from nekoflow.cli import app as cli_app
from nekoflow.llm import OpenAIChatModel
from nekoflow.llm.openai_stream import PER_MESSAGE_TOKENS
from nekoflow.settings import Settings
from nekoflow.storage import create_all
from nekoflow.storage.dialogue import utcnow
from nekoflow.storage.usage import LLMUsage
from nekoflow.tokens import estimate_tokens
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline
from nekoflow.usage.meter import UsageEntry
from nekoflow.usage.store import add_usage, today, usage_report
from tests.turns.conftest import deps, published, role  # noqa: F401  (fixtures)
from tests.turns.llm_server import Answer, FakeLLM, completion

TEXT = "【开心】你好呀莱姆,今天也一起玩吧。"
MESSAGES = [
    {"role": "system", "content": "你叫钦灵,进行角色扮演"},
    {"role": "user", "content": "你好呀钦灵"},
]


def without_usage(body: dict[str, Any], n: int) -> Answer:
    """A server that never reports usage, streamed or not."""
    payload = completion(TEXT)
    payload.pop("usage")
    return 200, payload, {}, 0.0


def refusing_stream_options(body: dict[str, Any], n: int) -> Answer:
    """A server that rejects the unknown parameter, as some do, and sends no usage."""
    if "stream_options" in body:
        error = {
            "error": {
                "message": "Unrecognized request argument supplied: stream_options",
                "type": "invalid_request_error",
                "param": "stream_options",
            }
        }
        return 400, error, {}, 0.0
    return without_usage(body, n)


@pytest.fixture
def model_at() -> Iterator[Any]:
    made: list[OpenAIChatModel] = []

    def make(server: FakeLLM) -> OpenAIChatModel:
        m = OpenAIChatModel(server.base_url, "test-model", timeout=5, connect_timeout=1)
        made.append(m)
        return m

    yield make
    for m in made:
        m.close()


def _expected_prompt(messages: list[dict[str, str]]) -> int:
    return sum(PER_MESSAGE_TOKENS + estimate_tokens(m["content"]) for m in messages)


def test_usage_sent_when_asked_is_recorded_exactly(model_at) -> None:
    with FakeLLM(lambda body, n: (200, completion(TEXT), {}, 0.0)) as server:
        result = model_at(server).stream(MESSAGES, lambda d: None)
    assert server.calls[0]["stream_options"] == {"include_usage": True}
    assert (result.prompt_tokens, result.completion_tokens) == (11, 7)
    assert result.usage_estimated is False


def test_a_stream_without_usage_is_estimated_and_marked(model_at, caplog) -> None:
    with FakeLLM(without_usage) as server:
        model = model_at(server)
        first = model.stream(MESSAGES, lambda d: None)
        second = model.stream(MESSAGES, lambda d: None)
    assert first.text == TEXT and first.usage_estimated is True
    assert first.prompt_tokens == _expected_prompt(MESSAGES) > 0
    assert first.completion_tokens == estimate_tokens(TEXT) > 0
    assert second.usage_estimated is True
    warnings = [r.getMessage() for r in caplog.records if "no token usage" in r.getMessage()]
    assert warnings == [
        f"model server {model.host} reported no token usage: tokens estimated "
        "(marked estimated in `nekoflow usage`)"
    ]  # once per client


def test_a_server_refusing_stream_options_is_asked_again_without_it_once(model_at) -> None:
    with FakeLLM(refusing_stream_options) as server:
        model = model_at(server)
        first = model.stream(MESSAGES, lambda d: None)
        second = model.stream(MESSAGES, lambda d: None)
    assert ["stream_options" in c for c in server.calls] == [True, False, False]
    assert first.text == second.text == TEXT
    assert first.usage_estimated and second.usage_estimated


def test_a_turn_records_estimated_usage_and_the_reports_show_it(
    deps,  # noqa: F811
    redis_url: str,
    redis_client,
    model_at,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deps.settings = Settings(
        database_url=str(deps.engine.url),
        redis_url=redis_url,  # streaming needs Redis (the token pub/sub)
        llm_backoff_base=0.0,
        llm_backoff_max=0.0,
        api_token=SecretStr("t" * 24),
    )
    with FakeLLM(without_usage) as server:
        deps.chat_model = model_at(server)
        handle = submit_turn(deps, "web", {"session_id": "s", "message": "你好", "user_id": "u1"})
        assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
    assert server.calls and server.calls[0].get("stream") is True
    with Session(deps.engine) as s:
        (row,) = s.exec(select(LLMUsage)).all()
    assert row.estimated is True and row.prompt_tokens > 0 and row.completion_tokens > 0

    (report,) = usage_report(deps.engine, by="kind")
    assert report["estimated_calls"] == 1 and report["calls"] == 1

    api = TestClient(create_app(deps.settings, engine=deps.engine, redis_client=redis_client))
    rows = api.get(
        "/api/usage", params={"by": "kind"}, headers={"Authorization": "Bearer " + "t" * 24}
    )
    assert rows.status_code == 200 and rows.json()[0]["estimated_calls"] == 1

    monkeypatch.setattr("nekoflow.usage.cli.get_engine", lambda: deps.engine)
    out = CliRunner().invoke(cli_app, ["usage", "--by", "kind"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    as_json = CliRunner().invoke(cli_app, ["usage", "--by", "kind", "--json"])
    assert json.loads(as_json.output)["estimated_calls"] == 1
    assert "their tokens are counted by nekoflow's estimate" in " ".join(out.output.split())


def test_a_database_made_before_the_estimated_column_gets_it(engine) -> None:
    with engine.begin() as conn:
        conn.execute(text("ALTER TABLE llm_usage DROP COLUMN estimated"))
    assert "estimated" not in {c["name"] for c in inspect(engine).get_columns("llm_usage")}
    with engine.begin() as conn:  # a row of the older release
        conn.execute(
            text(
                "INSERT INTO llm_usage (day, kind, turn_id, n, channel, scope_id, user_id, "
                "character, model, prompt_tokens, completion_tokens, created_at) VALUES "
                "(:day, 'reply', 't0', 1, '', '', '', '', 'm', 1, 2, :now)"
            ),
            {"day": today(), "now": utcnow()},
        )
    create_all(engine)  # what every process does at start
    with Session(engine) as s:
        add_usage(s, [UsageEntry("m", 3, 4, estimated=True)], kind="reply", turn_id="t1")
        add_usage(s, [UsageEntry("m", 5, 6)], kind="reply", turn_id="t2")
        s.commit()
    (report,) = usage_report(engine, by="kind")
    assert report["estimated_calls"] == 1 and report["total_tokens"] == 21
    with Session(engine) as s:
        old = s.exec(select(LLMUsage).where(LLMUsage.turn_id == "t0")).one()
    assert old.estimated is False
