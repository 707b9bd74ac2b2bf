"""Dispatch's one-statement lookup: the character (default, by id, by name) and its save."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session

from nekoflow.memory.history import get_or_create_save, save_id_for, write_turn
from nekoflow.storage.dialogue import Role
from nekoflow.turns.characters import character_and_save, resolve_role, role_id_and_name


def _roles(engine: Engine) -> tuple[int, int]:
    with Session(engine) as s:
        first, second = Role.new("甲", profile_prompt="p"), Role.new("乙", profile_prompt="p")
        s.add_all([first, second])
        s.commit()
        assert first.id is not None and second.id is not None
        return first.id, second.id


def test_the_character_is_found_by_default_id_or_name(engine: Engine) -> None:
    a, b = _roles(engine)
    with Session(engine) as s:
        assert character_and_save(s, None, "web:1") == (a, "甲", None, None)
        assert character_and_save(s, "", "web:1") == (a, "甲", None, None)
        assert character_and_save(s, str(b), "web:1") == (b, "乙", None, None)
        assert character_and_save(s, " 乙 ", None) == (b, "乙", None, None)
        assert character_and_save(s, "99999", "web:1") is None  # neither an id nor a name
        assert character_and_save(s, "丙", "web:1") is None
        assert role_id_and_name(s, str(b)) == (b, "乙")
        found = resolve_role(s, "乙")
        assert found is not None and found.id == b and found.profile_prompt == "p"


def test_the_characters_save_in_the_scope_comes_with_its_last_lines_time(engine: Engine) -> None:
    a, b = _roles(engine)
    at = datetime(2026, 11, 27, 8, 0, tzinfo=UTC)
    with Session(engine) as s:
        save = get_or_create_save(s, role_id=b, scope_id="web:1")
        empty = save_id_for(s, a, "web:1")  # another character's save in the same scope
        write_turn(
            s,
            save_id=save.id,  # type: ignore[arg-type]
            turn_id="t1",
            user_lines=[{"content": "你好"}],
            reply_segments=[],
            role_id=b,
            display_name="乙",
            now=at,
        )
        s.commit()
        assert save_id_for(s, b, "web:1") == save.id  # found, not created again
    with Session(engine) as s:
        assert character_and_save(s, str(b), "web:1") == (b, "乙", save.id, at)
        assert character_and_save(s, None, "web:1") == (a, "甲", empty, None)  # no line yet
        assert character_and_save(s, str(b), "web:2") == (b, "乙", None, None)
