"""examples/ is what a new operator copies: every file loads, and a turn runs from each event."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session

from nekoflow.channels import CharacterRuntimeContextDispatcher, load_runtime_config
from nekoflow.characters import import_card
from nekoflow.flow.policy import load_flow_config
from nekoflow.storage.turns import TurnRun, TurnStage
from nekoflow.turns.config_watch import check_config
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline
from nekoflow.worldbook.importers import parse_import
from nekoflow.worldbook.store import WorldBookStore

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
CHANNELS = ("qq", "qqbot", "feishu", "telegram", "web")


def test_config_ini_loads_with_flow_sections() -> None:
    path = EXAMPLES / "config.ini"
    assert check_config(str(path)) is None
    config = load_runtime_config(path)
    assert config.channel("qq").trigger == "mention_or_private"
    flow = load_flow_config(path)
    assert flow.for_channel("qq").on_busy == "merge"
    assert flow.for_channel("web").on_busy == "queue"


def test_world_books_and_card_import(engine) -> None:
    report = parse_import((EXAMPLES / "world_books.json").read_bytes(), fallback_name="x")
    WorldBookStore(engine).import_books(report.books)
    [book] = WorldBookStore(engine).list_all()
    assert book.id == "example-cat-cafe" and len(book.entries) == 3
    role, card_book, _ = import_card(engine, (EXAMPLES / "character_card.json").read_bytes())
    assert role.name == "钦灵" and role.initial_relationship["affection"] == 55
    assert card_book is not None and card_book.entries[0].keywords == ["打雷", "雷雨"]


@pytest.mark.parametrize("channel", CHANNELS)
def test_each_example_event_parses_with_its_channel(deps, channel: str) -> None:
    event = json.loads((EXAMPLES / "events" / f"{channel}.json").read_text(encoding="utf-8"))
    request = deps.adapter(channel).parse_event(event)
    assert request is not None and request.content


def test_a_qq_private_message_runs_a_turn_in_scope_qq_user(deps) -> None:
    deps.dispatcher = CharacterRuntimeContextDispatcher(
        load_runtime_config(EXAMPLES / "config.ini")
    )
    deps.flow = load_flow_config(EXAMPLES / "config.ini")
    report = parse_import((EXAMPLES / "world_books.json").read_bytes(), fallback_name="x")
    WorldBookStore(deps.engine).import_books(report.books)
    event = json.loads((EXAMPLES / "events" / "qq.json").read_text(encoding="utf-8"))
    handle = submit_turn(deps, "qq", event)
    assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
    with Session(deps.engine) as s:
        run = s.get(TurnRun, handle.turn_id)
        before = s.get(TurnStage, (handle.turn_id, "before_turn")).result
    assert run.status == "done"
    # the review guide's "Channels": a QQ private chat's scope is qq:user:{user_id}
    assert run.scope_id == f"qq:user:{event['user_id']}"
    guide = REPO / "docs" / "en" / "guides" / "review.md"
    assert "qq:user:{user_id}" in guide.read_text(encoding="utf-8")
    assert [e["id"] for e in before["injected"]] == ["rule-cafe"]  # the always-on rule
