"""Semantic retrieval through an OpenAI-compatible embeddings endpoint (a loopback server), on
SQLite and PostgreSQL: vectors filled off the turn's path, idempotent, dropped when a memory is
restated, blended with the lexical score; failures never carry the text."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import SecretStr
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from nekoflow.memory.embeddings import (
    EmbeddingsError,
    OpenAIEmbedder,
    dot,
    embedder_from,
    pack,
    query_vector,
    unpack,
)
from nekoflow.memory.retrieve import prompt_memories
from nekoflow.memory.settings import MemorySettings
from nekoflow.memory.store import write_memories
from nekoflow.memory.vectors import embed_scope
from nekoflow.settings import Settings
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import MemoryRecord

from .embeddings_server import EmbeddingsServer, vector

START = datetime.now(UTC).replace(microsecond=0) - timedelta(days=30)  # alive today
SETTINGS = Settings(database_url="sqlite://")
SCOPE = "web:u1"
FILLER = [
    "今天聊了天气,外面很晴朗",
    "一起看了一部科幻电影",
    "用户说工作很累,想早点睡",
    "We talked about the long week at work",
    "角色讲了一个关于月亮的故事",
    "用户晚饭吃了面条",
]


@pytest.fixture
def server():
    with EmbeddingsServer() as srv:
        yield srv


@pytest.fixture
def role_id(engine: Engine) -> int:
    with Session(engine) as s:
        role = Role(name="钦灵")
        s.add(role)
        s.commit()
        assert role.id is not None
        return role.id


def _write(engine: Engine, role_id: int, contents: list[str], at: datetime, imp: float = 0.5):
    rows = [
        MemoryRecord(
            role_id=role_id,
            scope_id=SCOPE,
            content=c,
            importance=imp,
            ttl="long",
            expires_at=at + timedelta(days=180),
            created_at=at,
        )
        for c in contents
    ]
    with Session(engine) as s:
        write_memories(s, rows, now=at, settings=SETTINGS)
        s.commit()


def _vectors(engine: Engine) -> dict[str, tuple[bytes | None, str | None]]:
    with Session(engine) as s:
        rows = s.exec(select(MemoryRecord)).all()
        return {r.content: (r.embedding, r.embedding_model) for r in rows}


def test_vectors_are_stored_unit_length_and_read_back() -> None:
    packed = pack([3.0, 4.0])
    assert list(unpack(packed) or []) == pytest.approx([0.6, 0.8])
    assert math.isclose(dot(unpack(packed) or [], unpack(packed) or []), 1.0, rel_tol=1e-6)
    assert unpack(b"") is None and unpack(b"abc") is None  # malformed: no vector
    assert dot([1.0], [1.0, 0.0]) == 0.0
    assert embedder_from(None, "m") is None  # no endpoint: lexical only


def test_the_scope_is_embedded_once_and_a_restated_memory_again(
    engine: Engine, role_id: int, server: EmbeddingsServer
) -> None:
    _write(engine, role_id, ["用户养了一只猫,叫年糕", *FILLER], START)
    emb = OpenAIEmbedder(server.base_url, "fake-embed", api_key=SecretStr("k-123"))
    assert embed_scope(engine, emb, role_id, SCOPE, batch=4) == 1 + len(FILLER)
    assert server.auth[-1] == "Bearer k-123"
    stored = _vectors(engine)
    assert {m for _, m in stored.values()} == {"fake-embed"}
    cat = unpack(stored["用户养了一只猫,叫年糕"][0])
    expected = vector("用户养了一只猫,叫年糕")
    norm = math.sqrt(sum(x * x for x in expected))
    assert list(cat or []) == pytest.approx([x / norm for x in expected], rel=1e-5)
    calls = len(server.requests)
    assert embed_scope(engine, emb, role_id, SCOPE) == 0  # idempotent: nothing left to do
    assert len(server.requests) == calls  # not even a request
    # A restatement that changes the content (UPDATE) drops the old vector; it is re-embedded.
    _write(engine, role_id, ["用户养了一只猫,名字叫年糕,三岁了"], START + timedelta(days=1))
    stored = _vectors(engine)
    changed = [c for c, (v, _) in stored.items() if v is None]
    assert changed and all("年糕" in c for c in changed)
    assert embed_scope(engine, emb, role_id, SCOPE) == len(changed)
    # Another model's vectors are not comparable: switching the model re-embeds everything.
    other = OpenAIEmbedder(server.base_url, "other-embed")
    assert embed_scope(engine, other, role_id, SCOPE) == len(_vectors(engine))


BERRIES = "Do I grow any berries?"
"""English: no word (nor concept of nekoflow.memory.concepts) in common with the planted
"用户在阳台上种了草莓"."""


def _block(engine: Engine, role_id: int, settings: MemorySettings, qv: list[float] | None) -> str:
    """The memory block of a turn asking :data:`BERRIES` ten days on (by meaning with ``qv``)."""
    with Session(engine) as s:
        got = prompt_memories(
            s,
            role_id=role_id,
            scope_id=SCOPE,
            message=BERRIES,
            context=[],
            now=START + timedelta(days=10),
            settings=settings,
            query_vector=qv,
            embeddings_model="fake-embed" if qv else None,
        )
    return got.block


def test_a_memory_sharing_no_word_with_the_message_is_found_by_meaning(
    engine: Engine, role_id: int, server: EmbeddingsServer
) -> None:
    _write(engine, role_id, ["用户在阳台上种了草莓"], START, imp=0.5)
    _write(
        engine,
        role_id,
        [f"{FILLER[i % len(FILLER)]} (第{i}次)" for i in range(60)],
        START + timedelta(days=2),
        imp=0.5,
    )
    emb = OpenAIEmbedder(server.base_url, "fake-embed")
    embed_scope(engine, emb, role_id, SCOPE)
    settings = MemorySettings(pool=3, semantic_scan=100)
    assert "草莓" not in _block(engine, role_id, settings, None)  # lexically unreachable
    qv = query_vector(emb, BERRIES, timeout=5)
    assert qv is not None
    assert "草莓" in _block(engine, role_id, settings, qv).splitlines()[0]  # by meaning, first


def test_a_failing_endpoint_names_the_status_never_the_text(server: EmbeddingsServer) -> None:
    emb = OpenAIEmbedder(server.base_url, "fake-embed")
    server.fail_next = 1
    with pytest.raises(EmbeddingsError) as err:
        emb.embed(["我的秘密是年糕"])
    assert "HTTP 500" in str(err.value) and "年糕" not in str(err.value)
    assert err.value.__cause__ is None and err.value.__suppress_context__  # no SDK detail
    server.fail_next = 1
    assert query_vector(emb, "我的秘密是年糕", timeout=5) is None  # the turn goes lexical
    dead = OpenAIEmbedder("http://127.0.0.1:9/v1", "fake-embed", timeout=1)
    with pytest.raises(EmbeddingsError, match="unreachable"):
        dead.embed(["x"])


def test_the_vector_scan_covers_the_whole_scope_not_the_newest_hundred(
    engine: Engine, role_id: int, server: EmbeddingsServer
) -> None:
    from nekoflow.memory.store import add_indexed

    def row(content: str, at: datetime) -> MemoryRecord:
        return MemoryRecord(
            role_id=role_id, scope_id=SCOPE, content=content, importance=0.5, ttl="permanent",
            created_at=at, updated_at=at,
        )  # fmt: skip

    rows = [row("用户在阳台上种了草莓", START)]
    rows += [
        row(f"{FILLER[i % len(FILLER)]} (第{i}次)", START + timedelta(hours=i)) for i in range(300)
    ]
    with Session(engine) as s:
        add_indexed(s, rows)  # 301 memories, none merged
        s.commit()
    emb = OpenAIEmbedder(server.base_url, "fake-embed")
    embed_scope(engine, emb, role_id, SCOPE, batch=64, max_batches=100)
    qv = query_vector(emb, BERRIES, timeout=5)
    assert qv is not None
    # the default scan (the whole, small, scope): 300 newer memories did not push it out
    assert "草莓" in _block(engine, role_id, MemorySettings(pool=3), qv).splitlines()[0]
