"""Dialogue-tree storage on real SQLite and PostgreSQL: saves, turn writes, branches, cycles."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import pydantic
import pytest
from sqlalchemy import func, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from nekoflow.errors import InputError
from nekoflow.memory import ReplySegment, build_memory
from nekoflow.memory.history import (
    get_or_create_save,
    load_history,
    load_history_naive,
    load_history_rows,
    set_active_leaf,
    write_turn,
)
from nekoflow.storage import session_scope
from nekoflow.storage.dialogue import Line, Role, Save
from tests.conftest import PG_URL


@pytest.fixture
def session(engine: Engine) -> Iterator[Session]:
    with Session(engine, expire_on_commit=False) as s:
        yield s


@pytest.fixture
def role_id(engine: Engine) -> int:
    with session_scope(engine) as s:
        role = Role.new("钦灵", profile_prompt="你叫钦灵,进行角色扮演")
        s.add(role)
        s.flush()
        assert role.id is not None
        return role.id


def _turn(
    session: Session,
    save_id: int,
    turn_id: str,
    user: str | None,
    *replies: str,
    role_id: int | None = None,
) -> list[Line]:
    return write_turn(
        session,
        save_id=save_id,
        turn_id=turn_id,
        user_lines=[{"content": user, "display_name": "莱姆"}] if user is not None else [],
        reply_segments=[ReplySegment(emotion="开心", content=r) for r in replies],
        role_id=role_id,
        display_name="钦灵",
    )


def _contents(lines: list[Line]) -> list[str]:
    return [line.content for line in lines]


# --- saves -----------------------------------------------------------------------------------


def test_get_or_create_save_returns_one_save_per_role_and_scope(session: Session, role_id: int):
    a = get_or_create_save(session, role_id=role_id, scope_id="qq:user:1")
    b = get_or_create_save(session, role_id=role_id, scope_id="qq:user:1")
    c = get_or_create_save(session, role_id=role_id, scope_id="qq:user:2")
    assert a.id == b.id != c.id
    assert a.last_message_id is None
    assert a.created_at.tzinfo is not None and a.created_at.utcoffset() == timedelta(0)


def test_get_or_create_save_rejects_unknown_role_and_bad_scope(session: Session, role_id: int):
    with pytest.raises(InputError) as err:
        get_or_create_save(session, role_id=role_id + 999, scope_id="x")
    assert err.value.field == "role_id"
    with pytest.raises(InputError) as err:
        get_or_create_save(session, role_id=role_id, scope_id="")
    assert err.value.field == "scope_id"


def test_get_or_create_save_is_race_safe(engine: Engine, role_id: int) -> None:
    workers = 6
    barrier = threading.Barrier(workers)
    ids: list[int | None] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            with session_scope(engine) as s:
                barrier.wait(timeout=10)
                ids.append(get_or_create_save(s, role_id=role_id, scope_id="race").id)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert len(ids) == workers and len(set(ids)) == 1
    with Session(engine) as s:
        assert s.execute(select(func.count()).select_from(Save)).scalar() == 1


# --- writing turns and reading the path ------------------------------------------------------


def test_write_turn_appends_under_the_leaf_and_moves_it(session: Session, role_id: int) -> None:
    save = get_or_create_save(session, role_id=role_id, scope_id="s")
    now = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=8)))
    first = write_turn(
        session,
        save_id=save.id,
        turn_id="t1",
        user_lines=[{"content": "你好呀钦灵", "display_name": "莱姆"}],
        reply_segments=[
            ReplySegment(emotion="开心", content="你好呀莱姆", tts="こんにちは", action="摇尾巴"),
            {"emotion": "好奇", "content": "今天呢?"},
        ],
        role_id=role_id,
        display_name="钦灵",
        now=now,
    )
    assert [(x.attribute, x.content) for x in first] == [
        ("user", "你好呀钦灵"),
        ("assistant", "你好呀莱姆"),
        ("assistant", "今天呢?"),
    ]
    assert first[0].parent_line_id is None
    assert [x.parent_line_id for x in first[1:]] == [first[0].id, first[1].id]
    assert first[1].tts_content == "こんにちは" and first[1].action_content == "摇尾巴"
    assert all(x.turn_id == "t1" and x.save_id == save.id for x in first)
    assert first[1].role_id == role_id and first[1].display_name == "钦灵"
    assert save.last_message_id == first[-1].id

    second = _turn(session, save.id, "t2", "作业写完了", "还没呢", role_id=role_id)
    assert second[0].parent_line_id == first[-1].id
    session.commit()

    session.expire_all()
    path = load_history(session, save.id)
    assert _contents(path) == ["你好呀钦灵", "你好呀莱姆", "今天呢?", "作业写完了", "还没呢"]
    assert path[0].created_at == now.astimezone(UTC)
    assert path[0].created_at.tzinfo is not None
    assert build_memory(path, role_id=role_id) == [
        {"role": "user", "content": "你好呀钦灵"},
        {"role": "assistant", "content": "【开心】你好呀莱姆<こんにちは>(摇尾巴)【好奇】今天呢?"},
        {"role": "user", "content": "作业写完了"},
        {"role": "assistant", "content": "【开心】还没呢"},
    ]


def test_write_turn_is_idempotent_per_turn_id(session: Session, role_id: int) -> None:
    save = get_or_create_save(session, role_id=role_id, scope_id="s")
    lines = _turn(session, save.id, "t1", "a", "b", "c")
    session.commit()
    updated = save.updated_at
    again = _turn(session, save.id, "t1", "different", "reply")
    session.commit()
    assert [x.id for x in again] == [x.id for x in lines]
    assert _contents(again) == ["a", "b", "c"]
    session.expire_all()
    save = session.get(Save, save.id)
    assert save.last_message_id == lines[-1].id and save.updated_at == updated
    assert session.execute(select(func.count()).select_from(Line)).scalar() == 3


def test_write_turn_does_not_commit(engine: Engine, role_id: int) -> None:
    with session_scope(engine) as s:
        save_id = get_or_create_save(s, role_id=role_id, scope_id="s").id
    with Session(engine) as s:
        _turn(s, save_id, "t1", "a", "b")
        s.rollback()
    with Session(engine) as s:
        assert load_history(s, save_id) == []
        assert s.get(Save, save_id).last_message_id is None


def test_concurrent_writers_of_one_turn_write_it_once(engine: Engine, role_id: int) -> None:
    with session_scope(engine) as s:
        save_id = get_or_create_save(s, role_id=role_id, scope_id="s").id
    barrier = threading.Barrier(4)
    results: list[list[int | None]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            with session_scope(engine) as s:
                barrier.wait(timeout=10)
                results.append([x.id for x in _turn(s, save_id, "same", "hi", "yo")])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert len(results) == 4 and all(r == results[0] for r in results)
    with Session(engine) as s:
        assert s.execute(select(func.count()).select_from(Line)).scalar() == 2
        assert _contents(load_history(s, save_id)) == ["hi", "yo"]


def test_write_turn_rejects_bad_input(session: Session, role_id: int) -> None:
    save = get_or_create_save(session, role_id=role_id, scope_id="s")
    with pytest.raises(InputError) as err:
        _turn(session, save.id + 999, "t", "a", "b")
    assert err.value.field == "save_id"
    with pytest.raises(InputError) as err:
        _turn(session, save.id, "t", None)
    assert err.value.field == "user_lines"
    with pytest.raises(pydantic.ValidationError, match="turn_id"):
        _turn(session, save.id, "", "a")
    with pytest.raises(pydantic.ValidationError, match="content"):
        write_turn(
            session,
            save_id=save.id,
            turn_id="t",
            user_lines=[{"display_name": "莱姆"}],
            reply_segments=[],
            role_id=None,
            display_name=None,
        )
    with pytest.raises(pydantic.ValidationError, match="emotion"):
        write_turn(
            session,
            save_id=save.id,
            turn_id="t",
            user_lines=[],
            reply_segments=[{"content": "x", "emotion": 5}],
            role_id=None,
            display_name=None,
        )


# --- branches --------------------------------------------------------------------------------


def test_regenerated_reply_is_a_sibling_and_the_leaf_selects_the_branch(
    session: Session, role_id: int
) -> None:
    save = get_or_create_save(session, role_id=role_id, scope_id="s")
    _turn(session, save.id, "t1", "u1", "a1")
    user2, reply2 = _turn(session, save.id, "t2", "u2", "a2")

    set_active_leaf(session, save.id, user2.id)  # regenerate: back to the user line...
    (regen,) = _turn(session, save.id, "t2-regen", None, "a2 again")  # ...and reply anew
    assert regen.parent_line_id == reply2.parent_line_id == user2.id
    session.commit()

    assert _contents(load_history(session, save.id)) == ["u1", "a1", "u2", "a2 again"]
    set_active_leaf(session, save.id, reply2.id)
    assert _contents(load_history(session, save.id)) == ["u1", "a1", "u2", "a2"]
    _turn(session, save.id, "t3", "u3", "a3")  # continues the selected branch
    assert _contents(load_history(session, save.id)) == ["u1", "a1", "u2", "a2", "u3", "a3"]
    assert _contents(load_history_naive(session, save.id)) == _contents(
        load_history(session, save.id)
    )


def test_set_active_leaf_validates_the_line(session: Session, role_id: int) -> None:
    save = get_or_create_save(session, role_id=role_id, scope_id="s")
    other = get_or_create_save(session, role_id=role_id, scope_id="other")
    (foreign,) = _turn(session, other.id, "t", "x")
    for bad in (foreign.id, foreign.id + 999):
        with pytest.raises(InputError) as err:
            set_active_leaf(session, save.id, bad)
        assert err.value.field == "line_id"


def test_load_history_limit_keeps_the_newest_lines_root_first(
    session: Session, role_id: int
) -> None:
    save = get_or_create_save(session, role_id=role_id, scope_id="s")
    for i in range(4):
        _turn(session, save.id, f"t{i}", f"u{i}", f"a{i}")
    session.commit()
    assert _contents(load_history(session, save.id, limit=3)) == ["a2", "u3", "a3"]
    assert _contents(load_history_rows(session, save.id, limit=3)) == ["a2", "u3", "a3"]
    assert len(load_history(session, save.id, limit=100)) == 8
    assert load_history(session, save.id, limit=0) == []
    with pytest.raises(InputError) as err:
        load_history(session, save.id, limit=-1)
    assert err.value.field == "limit"


def test_load_history_of_missing_or_empty_save(session: Session, role_id: int) -> None:
    save = get_or_create_save(session, role_id=role_id, scope_id="s")
    assert load_history(session, save.id) == []
    assert load_history(session, save.id + 999) == []
    assert load_history_naive(session, save.id) == []


# --- corrupt data ----------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("limit", [None, 50])
def test_a_corrupt_cycle_ends_the_path_instead_of_hanging(
    session: Session, role_id: int, limit: int | None
) -> None:
    save = get_or_create_save(session, role_id=role_id, scope_id="s")
    lines = [x for i in range(3) for x in _turn(session, save.id, f"t{i}", f"u{i}", f"a{i}")]
    # The root now points at the leaf: leaf → … → root → leaf → …
    session.execute(
        update(Line).where(col(Line.id) == lines[0].id).values(parent_line_id=lines[-1].id)
    )
    session.commit()
    session.expire_all()
    path = load_history(session, save.id, limit=limit)
    assert _contents(path) == ["u0", "a0", "u1", "a1", "u2", "a2"]
    assert _contents(load_history_rows(session, save.id, limit=limit)) == _contents(path)
    # A cycle that does not pass through the leaf: u1 → a1 → u1.
    session.execute(
        update(Line).where(col(Line.id) == lines[2].id).values(parent_line_id=lines[3].id)
    )
    session.commit()
    session.expire_all()
    path = load_history(session, save.id, limit=limit)
    assert _contents(path) == ["u1", "a1", "u2", "a2"]  # a2 → u2 → a1 → u1 → (a1 again: stop)
    assert _contents(load_history_rows(session, save.id, limit=limit)) == _contents(path)


def test_parent_link_into_another_save_ends_the_path(session: Session, role_id: int) -> None:
    save = get_or_create_save(session, role_id=role_id, scope_id="s")
    other = get_or_create_save(session, role_id=role_id, scope_id="o")
    (foreign,) = _turn(session, other.id, "t", "elsewhere")
    lines = _turn(session, save.id, "t", "u", "a")
    session.execute(
        update(Line).where(col(Line.id) == lines[0].id).values(parent_line_id=foreign.id)
    )
    session.commit()
    session.expire_all()
    assert _contents(load_history(session, save.id)) == ["u", "a"]


# --- tables ----------------------------------------------------------------------------------


def test_role_relationship_state_is_validated(session: Session) -> None:
    role = Role.new("白小喵", initial_relationship={"affection": 80, "jealousy": 5})
    session.add(role)
    session.commit()
    session.expire_all()
    state = session.get(Role, role.id).relationship_state
    assert (state.affection, state.trust, state.jealousy, state.familiarity) == (80, 50, 5, 0)
    with pytest.raises(pydantic.ValidationError, match="trust"):
        Role.new("x", initial_relationship={"trust": 101})
    with pytest.raises(pydantic.ValidationError, match="charm"):
        Role.new("x", initial_relationship={"charm": 1})


def test_load_history_rows_match_the_orm_lines_and_feed_the_builder(
    session: Session, role_id: int
) -> None:
    save = get_or_create_save(session, role_id=role_id, scope_id="s")
    _turn(session, save.id, "t1", "u1", "a1", "b1", role_id=role_id)
    user2, _ = _turn(session, save.id, "t2", "u2", "a2", role_id=role_id)
    set_active_leaf(session, save.id, user2.id)
    _turn(session, save.id, "t2b", None, "a2b", role_id=role_id)
    session.commit()
    lines = load_history(session, save.id)
    rows = load_history_rows(session, save.id)
    fields = list(Line.model_fields)
    assert [[getattr(r, f) for f in fields] for r in rows] == [
        [getattr(x, f) for f in fields] for x in lines
    ]
    assert rows[0].created_at.tzinfo is not None
    assert (
        build_memory(rows, role_id=role_id)
        == build_memory(lines, role_id=role_id)
        == [
            {"role": "user", "content": "u1"},
            {"role": "assistant", "content": "【开心】a1【开心】b1"},
            {"role": "user", "content": "u2"},
            {"role": "assistant", "content": "【开心】a2b"},
        ]
    )
    assert load_history_rows(session, save.id + 999) == []


def _seq_scans_of_line_in_the_step(plan: dict) -> list[str]:
    """Seq scans of ``line`` under the Recursive Union's recursive term (its second child)."""
    found: list[str] = []

    def walk(node: dict, in_step: bool) -> None:
        if in_step and node.get("Node Type") == "Seq Scan" and node.get("Relation Name") == "line":
            found.append(node["Node Type"])
        children = node.get("Plans", [])
        for i, child in enumerate(children):
            walk(child, in_step or (node.get("Node Type") == "Recursive Union" and i == 1))

    walk(plan, False)
    return found


@pytest.mark.parametrize(
    "db_url",
    [pytest.param("postgres", marks=pytest.mark.skipif(not PG_URL, reason="no PostgreSQL"))],
    indirect=True,
)
def test_each_step_of_the_path_is_a_key_lookup_whatever_the_statistics(
    engine: Engine, role_id: int
) -> None:
    """PostgreSQL plans the recursive step from the table's statistics: as a plain join, a
    ``line`` table not analyzed yet got a hash join that scanned every line on every step
    (quadratic in the path's length). The step must look the parent up by key either way."""
    from nekoflow.memory.history import _active_path_query

    n = 3000
    with session_scope(engine) as s:
        save = get_or_create_save(s, role_id=role_id, scope_id="web:long")
        save_id = save.id
    with engine.begin() as conn:  # one long path, the table never analyzed
        conn.exec_driver_sql(
            "INSERT INTO line (save_id, parent_line_id, attribute, content, turn_id, created_at)"
            " SELECT %(save)s, NULL, 'user', 'line ' || g, 't' || g, now()"
            " FROM generate_series(1, %(n)s) g",
            {"save": save_id, "n": n},
        )
        conn.exec_driver_sql(
            "UPDATE line SET parent_line_id = l.prev FROM (SELECT id, lag(id) OVER (ORDER BY id)"
            " AS prev FROM line WHERE save_id = %(save)s) l WHERE line.id = l.id",
            {"save": save_id},
        )
        conn.exec_driver_sql(
            "UPDATE save SET last_message_id = (SELECT max(id) FROM line WHERE save_id = %(s)s)"
            " WHERE id = %(s)s",
            {"s": save_id},
        )
    with engine.connect() as conn:
        assert len(load_history_rows(conn, save_id)) == n
        assert len(load_history_rows(conn, save_id, limit=50)) == 50
        for limited in (False, True):
            compiled = _active_path_query(limited, False, True).compile(dialect=engine.dialect)
            params = compiled.construct_params({"save_id": save_id, "limit": 50})
            (plan,) = conn.exec_driver_sql(
                f"EXPLAIN (FORMAT JSON) {compiled.string}", params
            ).scalar()
            assert _seq_scans_of_line_in_the_step(plan["Plan"]) == []


@pytest.mark.parametrize(
    "db_url",
    [pytest.param("postgres", marks=pytest.mark.skipif(not PG_URL, reason="no PostgreSQL"))],
    indirect=True,
)
def test_a_turns_lines_are_written_in_one_statement_whatever_their_number(
    engine: Engine, role_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL a turn's lines and the save's new leaf are one statement (after the save's
    lock and the look for the turn's lines), however many segments the reply has: each line's
    id is drawn first, so its parent is known in the insert."""
    import psycopg

    with session_scope(engine) as s:
        save_id = get_or_create_save(s, role_id=role_id, scope_id="web:chain").id
        first = _turn(s, save_id, "t0", "早", "早安")
    executed: list[str] = []
    real = psycopg.Cursor.execute

    def counting(self: psycopg.Cursor, query: object, *args: object, **kwargs: object) -> object:
        executed.append(str(query))
        return real(self, query, *args, **kwargs)

    at = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    segments = [
        ReplySegment(emotion="开心", content="一", tts="いち", action="挥手"),
        ReplySegment(content="二"),
        ReplySegment(emotion="害羞", content="三", action="低头"),
        ReplySegment(content="四", tts="よん"),
    ]
    with Session(engine) as s:
        monkeypatch.setattr(psycopg.Cursor, "execute", counting)
        lines = write_turn(
            s,
            save_id=save_id,
            turn_id="t1",
            user_lines=[
                {"content": "你好", "display_name": "莱姆", "audio_file": "a.ogg"},
                {"content": "在吗", "script_role_id": "lime", "sent_at": at},
            ],
            reply_segments=segments,
            role_id=role_id,
            display_name="钦灵",
            now=at,
        )
        monkeypatch.undo()
        s.commit()
    # lock, the turn's lines (none), the chain, the round index (round + its term counts)
    assert len(executed) == 4, executed
    ids = [x.id for x in lines]
    assert ids == sorted(ids) and len(set(ids)) == 6
    assert [x.parent_line_id for x in lines] == [first[-1].id, *ids[:-1]]
    with Session(engine) as s:
        assert s.get(Save, save_id).last_message_id == ids[-1]
        stored = load_history(s, save_id)
        assert [x.id for x in stored] == [x.id for x in first] + ids
        rows = [
            (x.attribute, x.content, x.original_emotion, x.tts_content, x.action_content)
            for x in stored[2:]
        ]
        assert rows == [
            ("user", "你好", None, None, None),
            ("user", "在吗", None, None, None),
            ("assistant", "一", "开心", "いち", "挥手"),
            ("assistant", "二", None, None, None),
            ("assistant", "三", "害羞", None, "低头"),
            ("assistant", "四", None, "よん", None),
        ]
        assert (stored[2].display_name, stored[2].audio_file) == ("莱姆", "a.ogg")
        assert (stored[3].script_role_id, stored[3].created_at) == ("lime", at)
        assert {x.role_id for x in stored[4:]} == {role_id}
        assert {x.display_name for x in stored[4:]} == {"钦灵"}
        assert {x.turn_id for x in stored[2:]} == {"t1"}
        # Written again: the same lines back, nothing added.
        again = _turn(s, save_id, "t1", "别的", "别的回复")
        assert [x.id for x in again] == ids
