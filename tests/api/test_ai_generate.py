"""``POST /api/world-books/{id}/ai-generate`` against a loopback OpenAI-compatible server.

The app talks to a real HTTP server (pytest-httpserver) through ``OpenAIChatModel``; the reply
parser is also tested on its own (it is pure).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from pytest_httpserver import HTTPServer

from nekoflow.api.ai_generate import (
    GenerationReplyError,
    build_generation_messages,
    parse_generated_entries,
)
from nekoflow.llm import OpenAIChatModel, ScriptedChatModel
from nekoflow.worldbook.models import WorldBook, WorldBookEntry
from nekoflow.worldbook.store import WorldBookStore

URL = "/api/world-books/omphalos/ai-generate"


@pytest.fixture
def store(engine) -> WorldBookStore:
    store = WorldBookStore(engine)
    store.create(
        "翁法罗斯",
        "崩坏:星穹铁道世界观设定",
        ["风堇"],
        id="omphalos",
        entries=[{"id": "oath", "name": "白塔旧誓", "keywords": ["白塔"], "content": "白塔…"}],
    )
    return store


@pytest.fixture
def llm_client(make_client: Callable[..., TestClient], openai_model: OpenAIChatModel) -> TestClient:
    return make_client(chat_model=openai_model)


def test_generates_entries_for_review_without_saving(
    llm_client: TestClient,
    auth: dict[str, str],
    store: WorldBookStore,
    llm_server: HTTPServer,
    llm_reply: Callable[[str], None],
    generated_json: str,
) -> None:
    llm_reply(generated_json)
    r = llm_client.post(URL, json={"topic": "火种仪式", "count": 2}, headers=auth)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["success"] is True and data["saved"] is False and data["count"] == 2
    assert data["model"] == "loopback-model" and data["rejected"] == []
    first, second = data["entries"]
    assert first["name"] == "火种仪式" and first["entry_type"] == "event"
    assert first["trigger_sources"] == ["user", "history"] and first["id"] == ""
    assert second["keywords"] == ["观星塔", "星图"]  # a keywords string is split
    for entry in data["entries"]:
        WorldBookEntry.model_validate(entry)
    assert [e.id for e in store.list_entries("omphalos")] == ["oath"]  # nothing saved

    (request, _), *_ = llm_server.log
    sent = json.loads(request.get_data())
    assert sent["response_format"] == {"type": "json_object"}
    assert sent["model"] == "loopback-model"
    prompt = "\n".join(m["content"] for m in sent["messages"])
    assert "JSON" in prompt and "翁法罗斯" in prompt and "火种仪式" in prompt
    assert "白塔旧誓" in prompt  # existing entries are listed so the model does not repeat them


def test_save_true_appends_the_entries(
    llm_client: TestClient,
    auth: dict[str, str],
    store: WorldBookStore,
    llm_reply: Callable[[str], None],
    generated_json: str,
) -> None:
    llm_reply(generated_json)
    r = llm_client.post(URL, json={"save": True}, headers=auth)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["saved"] is True and data["count"] == 2
    assert all(e["id"] and e["created_at"] for e in data["entries"])
    stored = store.list_entries("omphalos")
    assert [e.name for e in stored] == ["白塔旧誓", "火种仪式", "观星塔"]
    assert [e.id for e in stored[1:]] == [e["id"] for e in data["entries"]]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("I'm sorry, I can't do JSON today.", "model returned no entries"),
        ('{"review": {"score": 0.5}}', "model returned no entries"),
        ('{"entries": []}', "model returned no valid entries"),
        (
            '{"entries": [{"name": "x", "priority": "high", "keywords": ["a"], "content": "c"}]}',
            "priority",
        ),
        ('{"entries": [{"name": "空", "keywords": ["a"]}]}', "content is empty"),
    ],
)
def test_garbage_from_the_model_is_502_and_nothing_is_saved(
    llm_client: TestClient,
    auth: dict[str, str],
    store: WorldBookStore,
    llm_reply: Callable[[str], None],
    reply: str,
    message: str,
) -> None:
    llm_reply(reply)
    r = llm_client.post(URL, json={"save": True}, headers=auth)
    assert r.status_code == 502, r.text
    assert r.json()["success"] is False and message in r.json()["error"]
    assert [e.id for e in store.list_entries("omphalos")] == ["oath"]


def test_partly_valid_reply_keeps_the_valid_entries(
    llm_client: TestClient,
    auth: dict[str, str],
    store: WorldBookStore,
    llm_reply: Callable[[str], None],
) -> None:
    reply = {
        "entries": [
            {"name": "好", "keywords": ["好"], "content": "好的条目"},
            {"name": "坏", "keywords": ["坏"], "content": "x", "match_mode": "sometimes"},
            "not an object",
        ]
    }
    llm_reply(json.dumps(reply, ensure_ascii=False))
    r = llm_client.post(URL, json={"save": True}, headers=auth)
    assert r.status_code == 200
    data = r.json()
    assert [e["name"] for e in data["entries"]] == ["好"]
    assert len(data["rejected"]) == 2
    assert "match_mode" in data["rejected"][0] and "not an object" in data["rejected"][1]
    assert [e.name for e in store.list_entries("omphalos")] == ["白塔旧誓", "好"]


def test_model_server_errors_are_502(
    llm_client: TestClient, auth: dict[str, str], store: WorldBookStore, llm_server: HTTPServer
) -> None:
    llm_server.expect_request("/v1/chat/completions").respond_with_json(
        {"error": {"message": "model overloaded"}}, status=500
    )
    r = llm_client.post(URL, json={}, headers=auth)
    assert r.status_code == 502
    assert "chat model failed" in r.json()["error"]


def test_unusable_llm_settings_are_503(
    make_client: Callable[..., TestClient], auth: dict[str, str], store: WorldBookStore
) -> None:
    client = make_client(llm_provider="openai", llm_base_url=None, llm_api_key=None)
    r = client.post(URL, json={}, headers=auth)
    assert r.status_code == 503 and "NEKOFLOW_LLM_API_KEY" in r.json()["error"]


def test_unknown_book_and_bad_body(
    llm_client: TestClient, auth: dict[str, str], store: WorldBookStore
) -> None:
    assert (
        llm_client.post("/api/world-books/nope/ai-generate", json={}, headers=auth).status_code
        == 404
    )
    for body, field in [({"count": 0}, "count"), ({"count": 99}, "count"), ({"x": 1}, "x")]:
        r = llm_client.post(URL, json=body, headers=auth)
        assert r.status_code == 422 and field in r.json()["error"]


# ------------------------------------------------------------------ the pure parser


def test_parser_reads_fenced_json_bare_lists_and_mappings() -> None:
    fenced = '好的:\n```json\n{"entries": [{"name": "a", "keywords": ["a"], "content": "c"}]}\n```'
    assert [e.name for e in parse_generated_entries(fenced).entries] == ["a"]
    bare = '[{"name": "b", "keywords": "b、c", "content": "c", "id": "ignored"}]'
    (entry,) = parse_generated_entries(bare).entries
    assert entry.keywords == ["b", "c"] and entry.id == ""
    mapping = '{"entries": {"x": {"name": "x", "always_on": true, "content": "c"}}}'
    assert parse_generated_entries(mapping).entries[0].always_on is True
    chatty = 'Here you go: {"entries": [{"name": "d", "keywords": ["d"], "content": "c"}]} Enjoy!'
    assert parse_generated_entries(chatty).entries[0].name == "d"


def test_parser_limits_and_rejects() -> None:
    items = [{"name": str(n), "keywords": [str(n)], "content": "c"} for n in range(4)]
    items.append({"name": "never", "content": "c"})
    items.append({"name": "huge", "keywords": ["h"], "content": "c", "priority": 2**40})
    out = parse_generated_entries(json.dumps({"entries": items}), limit=3)
    assert [e.name for e in out.entries] == ["0", "1", "2"]
    assert len(out.rejected) == 3
    assert "more entries than" in out.rejected[0]
    assert "could never fire" in out.rejected[1]
    assert "priority" in out.rejected[2]


@pytest.mark.parametrize("text", ["", "null", "42", '"entries"', '{"items": 3}', "{not json"])
def test_parser_raises_when_there_is_no_entry_list(text: str) -> None:
    with pytest.raises(GenerationReplyError, match="model returned no entries"):
        parse_generated_entries(text)


def test_prompt_mentions_book_topic_and_count() -> None:
    book = WorldBook(id="b", name="翁法罗斯", description="设定", character_ids=["风堇"])
    system, user = build_generation_messages(book, topic="火种", count=7)
    assert system["role"] == "system" and "JSON" in system["content"]
    assert "entries" in system["content"] and "relationship" in system["content"]
    assert user["role"] == "user"
    for part in ("翁法罗斯", "设定", "风堇", "火种", "7"):
        assert part in user["content"]


def test_the_default_scripted_model_proposes_placeholder_entries(
    make_client: Callable[..., TestClient], auth: dict[str, str], store: WorldBookStore
) -> None:
    client = make_client(chat_model=ScriptedChatModel())
    r = client.post(URL, json={"topic": "火种仪式", "count": 3, "save": True}, headers=auth)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["count"] == 3 and data["saved"] is True and data["model"] == "scripted"
    names = [e["name"] for e in data["entries"]]
    assert len(set(names)) == 3 and all(n.startswith("火种仪式·") for n in names)
    for entry in data["entries"]:
        assert "离线脚本模型" in entry["content"] and entry["tags"] == ["scripted"]
    stored = store.get("omphalos")
    assert stored is not None and len(stored.entries) == 4
