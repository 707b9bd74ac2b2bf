"""``nekoflow character import|show|greet`` in fresh processes (embedded SQLite)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from sqlmodel import Session, select

from nekoflow.storage import make_engine
from nekoflow.storage.dialogue import Line, Save
from tests.corpus import corpus_file

CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "风堇",
        "description": "{{char}}是温柔的治疗师",
        "first_mes": "你醒啦,{{user}}",
        "alternate_greetings": ["又见面了,{{user}}", "欢迎回来,<USER>"],
        "post_history_instructions": "保持角色",
        "extensions": {"regex_scripts": [{"findRegex": "x"}]},
        "character_book": {
            "entries": [
                {"keys": ["白塔"], "content": "白塔", "id": 1},
                {"keys": ["/塔+/i"], "content": "正则", "id": 2, "use_regex": True},
            ]
        },
    },
}


def run_cli(tmp_path: Path, *args: str, extra_env: dict[str, str] | None = None) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env.update(
        COLUMNS="200",
        NEKOFLOW_DATABASE_URL=f"sqlite:///{tmp_path / 'cli.db'}",
        NEKOFLOW_REDIS_URL="redis://127.0.0.1:1/0",
        **(extra_env or {}),
    )
    return subprocess.run(
        [sys.executable, "-m", "nekoflow", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_prints_kept_mapped_and_not_used(tmp_path: Path) -> None:
    (tmp_path / "card.json").write_text(json.dumps(CARD, ensure_ascii=False))
    out = run_cli(tmp_path, "character", "import", "card.json")
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    kept = text[text.index("kept:") : text.index("mapped:")]
    mapped = text[text.index("mapped:") : text.index("not used:")]
    unused = text[text.index("not used:") :]
    for field in ("data.description", "data.first_mes", "data.alternate_greetings"):
        assert field in kept
    assert "data.post_history_instructions" in kept
    assert "data.name" in mapped and "data.character_book" in mapped
    assert "data.extensions.regex_scripts — SillyTavern regex scripts are not run" in unused
    assert "world book" in text and "2 entries" in text
    # The book import's report is printed as notes, not as fields "not mapped".
    notes = text[text.index("world book notes (") :]
    assert "enabled is not set: disabled, as SillyTavern reads a card entry" in notes
    assert "not mapped" not in text
    again = run_cli(tmp_path, "character", "import", "card.json")
    assert again.returncode == 2 and "--update" in again.stdout
    updated = run_cli(tmp_path, "character", "import", "card.json", "--update")
    assert updated.returncode == 0 and "updated character 1: 风堇" in updated.stdout


def test_show_greet_then_a_turn_continues_from_the_greeting(tmp_path: Path) -> None:
    (tmp_path / "card.json").write_text(json.dumps(CARD, ensure_ascii=False))
    assert run_cli(tmp_path, "character", "import", "card.json").returncode == 0
    show = run_cli(tmp_path, "character", "show", "风堇")
    assert "greeting 0 (first_mes): 你醒啦,{{user}}" in show.stdout
    assert "greeting 2 (alternate_greetings[1]): 欢迎回来,<USER>" in show.stdout
    assert "post_history_instructions: 4 chars" in show.stdout
    bad = run_cli(
        tmp_path, "character", "greet", "风堇", "--scope", "web:conversation:s1", "-i", "7"
    )
    assert bad.returncode == 2 and "greetings 0..2" in bad.stdout
    out = run_cli(
        tmp_path,
        "character",
        "greet",
        "风堇",
        "--scope",
        "web:conversation:s1",
        "-i",
        "2",
        "--user",
        "莱姆",
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "欢迎回来,莱姆" in out.stdout
    turn = run_cli(tmp_path, "turn", "我回来了", "--session", "s1", "--character", "风堇")
    assert turn.returncode == 0 and "· done" in turn.stdout, turn.stdout + turn.stderr
    again = run_cli(tmp_path, "character", "greet", "风堇", "--scope", "web:conversation:s1")
    assert again.returncode == 1 and "already has lines" in again.stdout
    engine = make_engine(f"sqlite:///{tmp_path / 'cli.db'}")
    with Session(engine) as s:
        save = s.exec(select(Save).where(Save.scope_id == "web:conversation:s1")).one()
        lines = s.exec(select(Line).where(Line.save_id == save.id).order_by(Line.id)).all()
    assert [line.attribute for line in lines][:2] == ["assistant", "user"]
    assert lines[0].content == "欢迎回来,莱姆" and lines[1].content == "我回来了"


def test_show_a_corpus_card(tmp_path: Path) -> None:
    out = run_cli(tmp_path, "character", "import", str(corpus_file("st_Megumin_v1.png")))
    assert out.returncode == 0 and "data" not in out.stdout.split("kept:")[1].split("mapped:")[0]
    assert "mes_example — example dialogue" in out.stdout
    show = run_cli(tmp_path, "character", "show", "Megumin")
    assert "spec chara_card_v1" in show.stdout and "greeting 0 (first_mes)" in show.stdout


def test_import_measures_the_book_against_the_configured_context(tmp_path: Path) -> None:
    """The budget notes use the turn's budgets (NEKOFLOW_LLM_CONTEXT_WINDOW), as ``worldbook
    import`` does: on 128k every always-on entry of lide_ai_v3 fits, on the 8k default four
    cannot (issue 33)."""
    card = str(corpus_file("lide_ai_v3.json"))
    (tmp_path / "8k").mkdir()
    (tmp_path / "128k").mkdir()
    small = run_cli(tmp_path / "8k", "character", "import", card)
    assert small.returncode == 0, small.stdout + small.stderr
    assert "never reach the prompt" in " ".join(small.stdout.split())
    wide = run_cli(
        tmp_path / "128k",
        "character",
        "import",
        card,
        extra_env={"NEKOFLOW_LLM_CONTEXT_WINDOW": "131072"},
    )
    assert wide.returncode == 0, wide.stdout + wide.stderr
    text = " ".join(wide.stdout.split())
    assert "never reach the prompt" not in text and "it is skipped" not in text
    assert "lore tokens" not in text  # no entry is over the 32,768-token lore budget
    assert "unknown macros" in text  # the other notes stay
