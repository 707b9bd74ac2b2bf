"""The operator commands: ``nekoflow character``, ``turn``, ``runs`` and ``sweep``.

``character`` and ``turn`` run in fresh processes on embedded defaults (SQLite, in-process
worker); ``sweep`` publishes to the real test Redis broker.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from nekoflow.characters import import_card, parse_card
from nekoflow.errors import InputError
from nekoflow.storage import create_all, make_engine
from nekoflow.storage.dialogue import Role, utcnow
from nekoflow.storage.turns import TurnRun
from nekoflow.worldbook.png import minimal_png
from nekoflow.worldbook.store import WorldBookStore


def card(**data: Any) -> dict[str, Any]:
    """A SillyTavern V2 card with a one-entry character book."""
    return {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": "风堇",
            "description": "温柔的治疗师",
            "personality": "细心",
            "scenario": "白塔之下",
            "first_mes": "你来啦",
            "extensions": {"relationship": {"好感度": 70, "信任": 65, "熟悉": 10}},
            "character_book": {
                "name": "风堇的书",
                "entries": [
                    {"keys": ["白塔"], "content": "白塔是分别的地方", "enabled": True, "id": 1}
                ],
            },
            **data,
        },
    }


def run_cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    """Run ``python -m nekoflow`` in ``tmp_path`` with a fresh SQLite database."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    base.update(
        COLUMNS="200",
        NEKOFLOW_DATABASE_URL=f"sqlite:///{tmp_path / 'cli.db'}",
        NEKOFLOW_REDIS_URL="redis://127.0.0.1:1/0",  # embedded mode never needs Redis
    )
    return subprocess.run(
        [sys.executable, "-m", "nekoflow", *args],
        cwd=tmp_path,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_card_import_creates_role_relationship_and_bound_book(engine) -> None:
    role, book, warnings = import_card(engine, json.dumps(card(), ensure_ascii=False).encode())
    assert role.name == "风堇"
    assert "角色描述:温柔的治疗师" in role.profile_prompt
    assert "性格:细心" in role.profile_prompt and role.card["first_mes"] == "你来啦"
    assert role.initial_relationship == {
        "affection": 70,
        "trust": 65,
        "familiarity": 10,
        "dependency": 30,
        "security": 50,
        "jealousy": 0,
    }
    assert book is not None and book.character_ids == ["风堇"]
    stored = WorldBookStore(engine).get(book.id)
    assert stored is not None and stored.entries[0].keywords == ["白塔"]
    assert isinstance(warnings, list)


def test_png_card_and_defaults() -> None:
    doc = card(extensions={})
    png = minimal_png({"chara": base64.b64encode(json.dumps(doc).encode()).decode()})
    parsed = parse_card(png)
    assert parsed.name == "风堇"
    assert (parsed.relationship["affection"], parsed.relationship["familiarity"]) == (50, 30)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b"{not json", "file"),
        (b"[1, 2]", "file"),
        (json.dumps({"spec": "chara_card_v2", "data": {"name": ""}}).encode(), "data.name"),
        (json.dumps(card(extensions={"relationship": {"好感": "很多"}})).encode(), "好感"),
    ],
)
def test_bad_cards_name_the_field_and_write_nothing(engine, raw: bytes, field: str) -> None:
    with pytest.raises(InputError) as err:
        import_card(engine, raw)
    assert err.value.field == field
    with Session(engine) as s:
        assert s.exec(select(Role)).all() == []
    assert WorldBookStore(engine).list_all() == []


def test_character_commands_then_turns_and_runs(tmp_path: Path) -> None:
    out = run_cli(tmp_path, "turn", "你好")
    assert out.returncode == 2 and "no character yet" in out.stdout
    (tmp_path / "card.json").write_text(json.dumps(card(), ensure_ascii=False))
    out = run_cli(tmp_path, "character", "import", "card.json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "imported character 1: 风堇" in out.stdout and "1 entries" in out.stdout
    out = run_cli(tmp_path, "character", "add", "钦灵", "-r", "好感=60", "-r", "trust=40")
    assert out.returncode == 0 and "added character 2" in out.stdout
    out = run_cli(tmp_path, "character", "add", "坏", "-r", "好感")
    assert out.returncode == 2 and "NAME=VALUE" in out.stdout + out.stderr
    out = run_cli(tmp_path, "character", "list")
    assert "风堇" in out.stdout and "钦灵" in out.stdout and "affection 60" in out.stdout

    first = run_cli(tmp_path, "turn", "我想去白塔看看,谢谢你", "--session", "s1")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "web:conversation:s1 · done" in first.stdout
    second = run_cli(tmp_path, "turn", "再见", "--session", "s1", "--character", "钦灵")
    assert second.returncode == 0 and "· done" in second.stdout
    nobody = run_cli(tmp_path, "turn", "喂", "--character", "无名")
    assert nobody.returncode == 2 and "no character '无名'" in nobody.stdout
    assert "风堇" in nobody.stdout and "Traceback" not in nobody.stdout + nobody.stderr
    out = run_cli(tmp_path, "character", "add", "钦灵")
    assert out.returncode == 2 and "exists already" in out.stdout
    out = run_cli(tmp_path, "character", "add", "新", "-r", "foo=3")
    assert out.returncode == 2 and "unknown relationship dimension 'foo'" in out.stdout

    out = run_cli(tmp_path, "runs", "--json")
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["status"] for r in rows] == ["done", "done"]
    assert all(len(r["stages"]) == 6 and r["prompt_tokens"] > 0 for r in rows)
    assert {r["role_id"] for r in rows} == {1, 2}
    assert "我想去白塔" not in out.stdout  # no message text in the run listing
    table = run_cli(tmp_path, "runs", "--status", "done", "--limit", "1")
    assert table.returncode == 0 and "6/6" in table.stdout and "scripted" in table.stdout


def test_sweep_republishes_stuck_turns(tmp_path: Path, redis_url: str, redis_client) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'cli.db'}")
    create_all(engine)
    old = utcnow() - timedelta(hours=1)
    with Session(engine) as s:
        s.add(
            TurnRun(
                turn_id="stuck-1",
                channel="web",
                scope_id="web:conversation:x",
                seq=1,
                status="running",
                stage="llm_call",
                publishes=1,
                created_at=old,
                updated_at=old,
            )
        )
        s.add(TurnRun(turn_id="fresh-1", channel="web", scope_id="web:conversation:y", seq=1))
        s.commit()
    env = {"NEKOFLOW_BROKER_URL": redis_url, "NEKOFLOW_RESULT_BACKEND": redis_url}
    out = run_cli(tmp_path, "sweep", env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "re-published 1 stuck turn(s)" in out.stdout and "stuck-1" in out.stdout
    assert redis_client.llen("turns") == 1
    body = json.loads(redis_client.lindex("turns", 0))
    assert body["headers"]["task"] == "nekoflow.turn.dispatch"
    assert "stuck-1" in body["headers"]["argsrepr"]
    with Session(engine) as s:
        assert s.get(TurnRun, "stuck-1").publishes == 2
        assert s.get(TurnRun, "fresh-1").publishes == 0


def test_character_names_are_unique_and_typed_values_strict(engine) -> None:
    from nekoflow.characters import add_character

    add_character(engine, "钦灵")
    with pytest.raises(InputError) as err:
        add_character(engine, " 钦灵 ")
    assert err.value.field == "name" and "exists already" in str(err.value)
    with pytest.raises(InputError) as err:
        import_card(engine, json.dumps(card(name="钦灵"), ensure_ascii=False).encode())
    assert err.value.field == "name"
    for bad, field in (({"foo": 3}, "foo"), ({"好感": 500}, "好感"), ({"trust": -1}, "trust")):
        with pytest.raises(InputError) as err:
            add_character(engine, "新角色", relationship=bad, strict=True)
        assert err.value.field == field
    # cards are lenient: other keys ignored, values clamped
    role = add_character(engine, "卡片角色", relationship={"好感": 500, "mood": "happy"})
    assert role.initial_relationship["affection"] == 100
    with Session(engine) as s:
        assert [r.name for r in s.exec(select(Role)).all()] == ["钦灵", "卡片角色"]


def test_bad_settings_are_one_line_naming_the_variable(tmp_path: Path) -> None:
    out = run_cli(tmp_path, "runs", env={"NEKOFLOW_LLM_PROVIDER": "bogus"})
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "invalid setting NEKOFLOW_LLM_PROVIDER" in out.stderr and "'bogus'" in out.stderr
    out = run_cli(tmp_path, "runs", env={"NEKOFLOW_ADAPTER_OPTIONS": "notjson"})
    assert out.returncode == 2 and "NEKOFLOW_ADAPTER_OPTIONS cannot be parsed" in out.stderr
    out = run_cli(tmp_path, "runs", "--status", "bogus")
    assert out.returncode == 2 and "'bogus' is not one of" in out.stdout + out.stderr
