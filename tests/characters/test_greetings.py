"""Greetings written into the dialogue tree: once per conversation, even with concurrent writers."""

from __future__ import annotations

import json
import threading

import pytest
from sqlmodel import Session, select

from nekoflow.characters import import_card_report
from nekoflow.characters.card import CardData
from nekoflow.characters.greetings import (
    greeting_index,
    greeting_text,
    start_conversation,
    write_greeting,
)
from nekoflow.errors import InputError
from nekoflow.macros import MacroContext
from nekoflow.memory.history import get_or_create_save
from nekoflow.storage.dialogue import Line, Role

CARD = {
    "spec": "chara_card_v2",
    "data": {
        "name": "风堇",
        "nickname": "小堇",
        "first_mes": "你醒啦,{{user}}。我是{{char}}。",
        "alternate_greetings": ["又见面了", "  "],
    },
}


def test_index_and_text() -> None:
    card = CardData.model_validate(CARD["data"])
    assert [greeting_index(v, card) for v in (None, 1, "2", 3, -1, True, "x", 1.5)] == [
        0,
        1,
        2,
        0,
        0,
        0,
        0,
        0,
    ]
    ctx = MacroContext(char="小堇", user="莱姆")
    assert greeting_text(card, 0, ctx) == "你醒啦,莱姆。我是小堇。"
    assert greeting_text(card, 2, ctx) == ""
    with pytest.raises(InputError) as err:
        greeting_text(card, 3, ctx)
    assert err.value.field == "greeting"


def test_concurrent_writers_write_one_greeting(engine) -> None:
    role = import_card_report(engine, json.dumps(CARD, ensure_ascii=False).encode()).role
    with Session(engine) as s:
        save = get_or_create_save(s, role_id=role.id, scope_id="web:conversation:x")
        s.commit()
        save_id = save.id
    barrier = threading.Barrier(4)
    written: list[bool] = []
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            with Session(engine) as s:
                r = s.get(Role, role.id)
                barrier.wait()
                line = write_greeting(s, save_id=save_id, role=r, text=f"问候{n}")
                s.commit()
                written.append(line is not None)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert sorted(written) == [False, False, False, True]
    with Session(engine) as s:
        lines = s.exec(select(Line).where(Line.save_id == save_id)).all()
    assert len(lines) == 1 and lines[0].attribute == "assistant" and lines[0].role_id == role.id


def test_start_conversation(engine) -> None:
    import_card_report(engine, json.dumps(CARD, ensure_ascii=False).encode())
    line, text = start_conversation(engine, "风堇", "qq:private:1", index=1)
    assert line is not None and text == "又见面了"
    again, _ = start_conversation(engine, "风堇", "qq:private:1")
    assert again is None
    with pytest.raises(InputError) as err:
        start_conversation(engine, "无名", "qq:private:1")
    assert err.value.field == "name"
