"""Everything said is findable (SQLite and PostgreSQL, through the real stages): past rounds are
retrieval units found by the full-text engine over the whole scope, the character's lines never
drive the query, a time expression narrows by date, and forgetting a fact hides its rounds."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from sqlmodel import Session, select

from nekoflow.memory.admin import forget_memory
from nekoflow.memory.history import save_id_for, write_turn
from nekoflow.memory.retrieve import retrieve
from nekoflow.memory.settings import MemorySettings
from nekoflow.memory.store import add_indexed
from nekoflow.storage.turns import MemoryRecord
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline
from nekoflow.turns.stages.prompt import llm_messages

SESSION = "rounds"
SCOPE = f"web:conversation:{SESSION}"
NOW = datetime.now(UTC).replace(microsecond=0)


def _role(deps: TurnDeps) -> int:
    with Session(deps.engine) as s:
        from nekoflow.storage.dialogue import Role

        role = s.exec(select(Role)).first()
        assert role is not None and role.id is not None
        return role.id


def _said(deps: TurnDeps, pairs: list[tuple[datetime, str, str]], prefix: str = "t") -> None:
    """Write past turns (time, user line, reply) as memory_build does."""
    role_id = _role(deps)
    with Session(deps.engine) as s:
        save_id = save_id_for(s, role_id, SCOPE)
        for i, (at, user, reply) in enumerate(pairs):
            write_turn(
                s,
                save_id=save_id,
                turn_id=f"{prefix}{i}",
                user_lines=[{"content": user}],
                reply_segments=[{"content": reply}],
                role_id=role_id,
                display_name="钦灵",
                now=at,
            )
        s.commit()


def _ask(deps: TurnDeps, message: str) -> str:
    """A real turn; the system prompt the model received."""
    event = {"session_id": SESSION, "user_id": "u1", "message": message}
    event["metadata"] = {"time": int(NOW.timestamp())}  # type: ignore[assignment]
    handle = submit_turn(deps, "web", event)
    assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
    return llm_messages(deps, handle.turn_id)[0]["content"]


def _filler(start: datetime, n: int, text: str = "my friend's birthday party {i} was loud") -> list:
    return [(start + timedelta(minutes=10 * i), text.format(i=i), "哈哈") for i in range(n)]


def test_an_old_round_with_a_common_word_is_found_among_2000_newer(deps: TurnDeps) -> None:
    old = NOW - timedelta(days=90)
    fact = (old, "oh and my birthday is on the 14th of November", "记住啦")
    _said(deps, [fact, *_filler(old + timedelta(days=1), 2000)])
    system = _ask(deps, "when is my birthday?")
    assert "14th of November" in system
    assert "对话] 用户: oh and my birthday" in system  # as a dated round


def test_an_old_memory_with_a_common_word_is_a_candidate_among_2000_newer(
    deps: TurnDeps,
) -> None:
    role_id = _role(deps)
    old = NOW - timedelta(days=90)

    def memory(content: str, at: datetime) -> MemoryRecord:
        return MemoryRecord(
            role_id=role_id,
            scope_id=SCOPE,
            content=content,
            importance=0.5,
            ttl="permanent",
            created_at=at,
            updated_at=at,
        )

    rows = [memory("生日是十一月十四号", old)]
    rows += [memory(f"朋友说他的生日是在{i}号", old + timedelta(hours=i)) for i in range(2000)]
    with Session(deps.engine) as s:
        add_indexed(s, rows)
        s.commit()
        ranked = retrieve(
            s,
            role_id=role_id,
            scope_id=SCOPE,
            message="我生日是哪天",
            context=[],
            now=NOW,
            settings=MemorySettings(),
        )
    assert "生日是十一月十四号" in [m.candidate.content for m in ranked[:5]]


def test_the_characters_own_words_do_not_drive_the_query(deps: TurnDeps) -> None:
    role_id = _role(deps)
    old = NOW - timedelta(days=30)
    with Session(deps.engine) as s:
        rows = [
            MemoryRecord(
                role_id=role_id,
                scope_id=SCOPE,
                content="grandma grows persimmon trees in her yard",
                importance=0.0,
                ttl="permanent",
                created_at=old,
            )
        ]
        rows += [
            MemoryRecord(
                role_id=role_id,
                scope_id=SCOPE,
                content=f"likes board game number {i}",
                importance=0.9,
                ttl="permanent",
                created_at=old,
            )
            for i in range(30)
        ]
        add_indexed(s, rows)
        s.commit()
    _said(deps, [(NOW - timedelta(minutes=5), "hi", "I made persimmon jam today, persimmon!")])
    system = _ask(deps, "what should we do this evening?")
    assert "persimmon trees" not in system


def test_a_time_expression_narrows_the_rounds_by_date(deps: TurnDeps) -> None:
    brews = [f"coffee brand{i:02d}" for i in range(40)]
    noon = datetime.combine(NOW.date(), time(12), UTC)
    pairs = [
        (noon - timedelta(days=40 - i), f"today I drank {b}", "好喝吗") for i, b in enumerate(brews)
    ]
    # yesterday's round leaves the recent window: a hundred and twenty lines said since
    pairs += _filler(NOW - timedelta(hours=1, minutes=30), 120, "ok {i}")
    _said(deps, pairs)
    yesterday = brews[-1]
    system = _ask(deps, "which coffee did I drink yesterday?")
    rounds = [line for line in system.splitlines() if "对话] 用户:" in line]
    assert rounds and yesterday in rounds[0], rounds


def test_forgetting_a_fact_hides_the_rounds_that_stated_it(deps: TurnDeps) -> None:
    role_id = _role(deps)
    old = NOW - timedelta(days=20)
    _said(
        deps,
        [(old, "my locker code is 4417, don't tell anyone", "嘘"), *_filler(old, 150, "ok {i}")],
        prefix="f",
    )
    with Session(deps.engine) as s:
        m = MemoryRecord(
            role_id=role_id,
            scope_id=SCOPE,
            turn_id="f0",
            content="the user's locker code is 4417",
            importance=0.5,
            ttl="permanent",
            created_at=old,
        )
        add_indexed(s, [m])
        s.commit()
        memory_id = m.id
    assert "4417" in _ask(deps, "what is my locker code?")
    with Session(deps.engine) as s:
        assert memory_id is not None
        forget_memory(s, memory_id)
    assert "4417" not in _ask(deps, "tell me my locker code again")


def test_an_old_round_of_a_changed_fact_carries_the_current_value(deps: TurnDeps) -> None:
    _ask(deps, "我现在住在杭州的滨江区,离江边走路十分钟")  # the review stores the fact
    _ask(deps, "上周末终于搬家了,搬到了西湖区文三路")  # no 我: still the user's move
    _said(deps, _filler(NOW - timedelta(minutes=30), 150, "ok {i}"), prefix="h")
    system = _ask(deps, "滨江区离江边近吗")
    old = [line for line in system.splitlines() if "用户: 我现在住在杭州的滨江区" in line]
    assert old, system
    assert "西湖区文三路" in old[0] and "更新" in old[0]  # never the old value alone


def test_a_named_time_holding_no_round_is_searched_as_words(deps: TurnDeps) -> None:
    old = NOW - timedelta(days=40)
    plan = (old, "I'm planning to take the JLPT N2 in December, wish me luck", "加油")
    exams = _filler(old + timedelta(days=1), 150, "weird dreams about exams again {i}")
    _said(deps, [plan, *exams])
    system = _ask(deps, "I'm taking which exam in December?")  # no round is dated December
    assert "JLPT" in system
