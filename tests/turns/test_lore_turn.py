"""Lore at turn time (issue 33): imported SillyTavern books follow the budget alone (no hidden
entry cap), the seed's own books keep the SPEC's cap, and every matched entry the prompt left out
is recorded on the turn with its reason (ids and reasons only) and shown to operators."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

from sqlmodel import Session, select

from nekoflow.characters import import_card_report
from nekoflow.observability.turn_view import dropped_text, turn_inputs
from nekoflow.storage.turns import TurnStage
from nekoflow.turns.models import BeforeTurnResult
from nekoflow.worldbook import WorldBook, WorldBookEntry
from nekoflow.worldbook.budgets import lore_recall_config
from nekoflow.worldbook.store import WorldBookStore
from tests.corpus import corpus_file
from tests.turns.test_prompt_cards import start_turn

QUESTION = "师兄，我们玄天宗最近怎么样？"


def _before(deps, turn_id: str) -> BeforeTurnResult:
    with Session(deps.engine) as s:
        stage = s.exec(
            select(TurnStage).where(TurnStage.turn_id == turn_id, TurnStage.stage == "before_turn")
        ).one()
    return BeforeTurnResult.model_validate(stage.result)


def _lide_turn(deps, context_window: int) -> tuple[BeforeTurnResult, dict[str, str]]:
    """The 玄天宗 question to the lide_ai_v3 card, with lore budgets of ``context_window``."""
    deps = dataclasses.replace(
        deps, recall_config=lore_recall_config(context_window=context_window)
    )
    role = import_card_report(deps.engine, corpus_file("lide_ai_v3.json").read_bytes()).role
    [book] = WorldBookStore(deps.engine).list_all()
    names = {e.id: e.name for e in book.entries}
    return _before(deps, start_turn(deps, role.name, QUESTION)), names


def test_a_128k_context_injects_the_named_entry_and_every_always_on_entry(deps) -> None:
    before, names = _lide_turn(deps, 131_072)
    injected = {names[e.id] for e in before.injected}
    assert "玄天宗" in injected  # the entry the user named
    # every enabled always-on entry fits a 32k-token lore budget: none is lost to a count cap
    assert {"世界设定", "扮演准则", "李德_二次解释", "阶段指导", "变量列表"} <= injected
    assert len(before.injected) > 8
    assert before.dropped == []


def test_an_8k_context_records_why_the_named_entry_was_left_out(deps) -> None:
    before, names = _lide_turn(deps, 8192)
    dropped = {names[d.id]: d for d in before.dropped}
    assert "玄天宗" not in {names[e.id] for e in before.injected}
    why = dropped["玄天宗"]
    assert why.reason == "over_budget" and why.needed and why.available is not None
    assert why.needed > why.available and why.budget in {"tokens", "total", "keyword"}
    # nothing matched silently vanishes: injected and dropped do not overlap
    assert not {e.id for e in before.injected} & {d.id for d in before.dropped}
    # the operator sees the same, without entry content
    view = turn_inputs(deps.engine, [_turn_of(deps)])[_turn_of(deps)]
    assert [d["id"] for d in view.dropped] == [d.id for d in before.dropped]
    line = dropped_text(view.dropped)
    assert f"{why.id} over_budget ({why.needed}/{why.available}" in line
    book = WorldBookStore(deps.engine).list_all()[0]
    assert not any(e.content[:20] in line for e in book.entries if e.content)


def test_the_api_and_the_runs_page_show_dropped_lore(deps) -> None:
    """``GET /api/turns/{id}`` carries the dropped entries with their figures, and the runs
    page's turn view lists each with its reason, beside the injected ones (no content)."""
    from fastapi.testclient import TestClient
    from pydantic import SecretStr

    from nekoflow.api import create_app

    before, names = _lide_turn(deps, 8192)
    turn_id = _turn_of(deps)
    token = "test-token-0123456789"
    settings = deps.settings.model_copy(update={"api_token": SecretStr(token)})
    client = TestClient(create_app(settings, engine=deps.engine, turn_deps=deps))
    auth = {"Authorization": f"Bearer {token}"}
    body = client.get(f"/api/turns/{turn_id}", headers=auth).json()
    assert [(d["id"], d["reason"]) for d in body["dropped"]] == [
        (d.id, d.reason) for d in before.dropped
    ]
    xuantian = next(d for d in body["dropped"] if names[d["id"]] == "玄天宗")
    assert xuantian["needed"] > xuantian["available"]
    assert {e["id"] for e in body["injected"]} == {e.id for e in before.injected}
    client.post("/runs/login", data={"token": token})
    page = client.get(f"/runs/{turn_id}").text
    for d in before.dropped:
        assert f"<code>{d.id}</code> dropped: {d.reason}" in page
    book = WorldBookStore(deps.engine).list_all()[0]
    assert not any(e.content[:20] in page for e in book.entries if len(e.content) >= 20)


def test_dropped_text_names_each_budget_once() -> None:
    tokens = {"id": "b-2", "reason": "over_budget", "needed": 343, "available": 0}
    chars = {"id": "b-0", "reason": "over_budget", "needed": 862, "available": 240}
    line = dropped_text(
        [
            {**tokens, "unit": "tokens", "budget": "tokens"},
            {**chars, "unit": "chars", "budget": "always"},
            {"id": "b-9", "reason": "max_entries"},
        ]
    )
    assert line == (
        "b-2 over_budget (343/0 tokens); b-0 over_budget (862/240 chars always); b-9 max_entries"
    )


def _turn_of(deps) -> str:
    with Session(deps.engine) as s:
        return s.exec(select(TurnStage.turn_id)).first()


def _book(n: int, source_format: str) -> WorldBook:
    from nekoflow.worldbook.rules import BookRules

    return WorldBook(
        id=f"b-{source_format or 'seed'}",
        name=f"book {source_format or 'seed'}",
        rules=BookRules(source_format=source_format),
        entries=[
            WorldBookEntry(id=f"e{i}", name=f"entry {i}", keywords=["白塔"], content=f"白塔 {i}")
            for i in range(n)
        ],
    )


def test_the_seed_cap_holds_for_seed_books_only(deps) -> None:
    store = WorldBookStore(deps.engine)
    store.import_books([_book(10, "")])
    seed_turn = start_turn(deps, "钦灵", "白塔怎么样", session="seed")
    seed = _before(deps, seed_turn)
    assert len(seed.injected) == 8
    assert [d.reason for d in seed.dropped] == ["max_entries", "max_entries"]

    store.delete("b-seed")
    store.import_books([_book(10, "world_info")])
    imported = _before(deps, start_turn(deps, "钦灵", "白塔怎么样", session="imported"))
    assert len(imported.injected) == 10 and imported.dropped == []


def test_runs_text_and_json_show_dropped_lore(deps, tmp_path: Path) -> None:
    _lide_turn(deps, 8192)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env.update(NEKOFLOW_DATABASE_URL=str(deps.engine.url.render_as_string(hide_password=False)))
    env["NEKOFLOW_REDIS_URL"] = "redis://127.0.0.1:1/0"
    text = subprocess.run(
        [sys.executable, "-m", "nekoflow", "runs"], env=env, capture_output=True, text=True
    )
    assert text.returncode == 0, text.stderr
    assert "world book dropped:" in text.stdout and "over_budget" in text.stdout
    as_json = subprocess.run(
        [sys.executable, "-m", "nekoflow", "runs", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert '"dropped": [{"id"' in as_json.stdout


# --- unknown macros (an extension's, e.g. MVU's, used by lide_ai_v3) ----------------------------

MVU = "{{format_message_variable::stat_data}}"


def test_unknown_macros_are_listed_and_stripped_only_when_asked() -> None:
    from nekoflow.macros import MacroContext, render_macros, unknown_macros

    text = f"状态:{MVU} {{{{char}}}} {{{{description}}}} {{{{getvar::x}}}} {MVU}"
    assert unknown_macros(text) == [MVU, "{{getvar::x}}"]
    ctx = MacroContext(char="李德", values={"description": "d"})
    assert render_macros(text, ctx) == f"状态:{MVU} 李德 d {{{{getvar::x}}}} {MVU}"
    stripped = MacroContext(char="李德", values={"description": "d"}, strip_unknown=True)
    assert render_macros(text, stripped) == "状态: 李德 d  "
    assert unknown_macros("{{char}} {{random::a::b}} {{// note}} {{input}}") == []


def test_import_reports_unknown_macros_by_entry() -> None:
    from nekoflow.worldbook.importers import parse_import

    report = parse_import(corpus_file("lide_ai_v3.json").read_bytes())
    [book] = report.books
    holding = [e for e in book.entries if MVU in e.content]
    assert holding
    notes = [w for w in report.warnings if "unknown macros" in w]
    assert len(notes) == len(holding)
    for entry, note in zip(holding, notes, strict=True):
        assert entry.id in note and MVU in note and "NEKOFLOW_UNKNOWN_MACROS=strip" in note


def test_a_turn_keeps_unknown_macros_by_default_and_strips_them_when_set(deps, monkeypatch) -> None:
    from nekoflow.turns.stages import llm_messages
    from nekoflow.turns.stages.prompt import prompt_settings

    role = import_card_report(deps.engine, corpus_file("lide_ai_v3.json").read_bytes()).role
    wide = dataclasses.replace(deps, recall_config=lore_recall_config(context_window=131_072))
    kept = "\n".join(m["content"] for m in llm_messages(wide, start_turn(wide, role.name, "你好")))
    assert MVU in kept
    monkeypatch.setenv("NEKOFLOW_UNKNOWN_MACROS", "strip")
    prompt_settings.cache_clear()
    try:
        turn = start_turn(wide, role.name, "你好", session="strip")
        text = "\n".join(m["content"] for m in llm_messages(wide, turn))
    finally:
        prompt_settings.cache_clear()
    assert MVU not in text and "format_message_variable" not in text


# --- test-match --scope scans what the scope's next turn scans -----------------------------------


def _preview(deps, scope: str, message: str, role_id: int | None) -> tuple[list, list]:
    """test-match's answer for the scope's next turn: (injected ids, (dropped id, reason))."""
    from nekoflow.turns.lore_preview import scope_view
    from nekoflow.worldbook import WorldBookRecallContext, recall

    view = scope_view(
        deps.engine, scope, role_id=role_id, history_limit=deps.settings.history_limit
    )
    context = WorldBookRecallContext(
        latest_user_message=message, recent_messages=view.messages, character_id=view.role_name
    )
    outcome = recall(
        context,
        WorldBookStore(deps.engine).list_all(),
        character_id=str(view.role_id),
        config=deps.recall_config,
    )
    return [r.entry.id for r in outcome.results], [(d.entry_id, d.reason) for d in outcome.dropped]


def _recorded(before: BeforeTurnResult) -> tuple[list[str], list[tuple[str, str]]]:
    sections = [d for d in before.dropped if d.reason == "sections"]
    assert sections == []  # the matcher's budgets, not the prompt's sections, left these out
    return [e.id for e in before.injected], [(d.id, d.reason) for d in before.dropped]


def test_test_match_on_a_scope_agrees_with_the_turn(deps) -> None:
    from nekoflow.turns.enqueue import submit_turn
    from nekoflow.turns.runner import run_inline
    from nekoflow.turns.stages import before_turn, dispatch
    from tests.turns.test_prompt_cards import event

    deps = dataclasses.replace(deps, recall_config=lore_recall_config(context_window=8192))
    role = import_card_report(deps.engine, corpus_file("lide_ai_v3.json").read_bytes()).role
    scope = "web:conversation:s1"
    # a new scope: the turn scans the greeting it writes first; test-match must too
    expected = _preview(deps, scope, QUESTION, role.id)
    first = submit_turn(deps, "web", event(QUESTION, role.name)).turn_id
    assert run_inline(deps, first, sleep=False) == "ok"
    assert _recorded(_before(deps, first)) == expected
    # a scope with history: the next turn scans it, test-match too
    follow = "最近怎么样？"
    expected = _preview(deps, scope, follow, None)  # the scope's own character
    second = submit_turn(deps, "web", event(follow, role.name)).turn_id
    dispatch(deps, second)
    before_turn(deps, second)
    assert _recorded(_before(deps, second)) == expected
    # without the scope, the greeting's and history's keys are not scanned: a different answer
    from nekoflow.worldbook import WorldBookRecallContext, recall

    bare = recall(
        WorldBookRecallContext(latest_user_message=follow, character_id=role.name),
        WorldBookStore(deps.engine).list_all(),
        character_id=str(role.id),
        config=deps.recall_config,
    )
    answer = ([r.entry.id for r in bare.results], [(d.entry_id, d.reason) for d in bare.dropped])
    assert answer != expected
