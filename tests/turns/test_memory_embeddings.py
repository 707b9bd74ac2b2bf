"""Embeddings through real workers: after a turn writes a memory, the ``memory`` queue stores its
vector (ids only in the task); the next turn embeds its message for retrieval. (That vectors
find a memory sharing no word with the message is shown in tests/memory/test_embeddings.py.)
SQLite and PostgreSQL, Redis broker."""

from __future__ import annotations

from sqlmodel import Session, col, select

from nekoflow.storage.turns import MemoryRecord, TurnStage
from tasks import enqueue_turn

from ..memory.embeddings_server import EmbeddingsServer
from .conftest import wait_for


def web_event(text: str) -> dict:
    """A Web message with an important plot choice, so the rule review writes a memory."""
    return {
        "session_id": "emb",
        "message": text,
        "user_id": "u1",
        "display_name": "莱姆",
        "metadata": {"choice": {"level": "important", "text": text[:12]}},
    }


def test_memories_get_vectors_off_the_turn_and_are_found_by_meaning(live, workers) -> None:
    with EmbeddingsServer() as server:
        env = {
            "NEKOFLOW_MEMORY_EMBEDDINGS_BASE_URL": server.base_url,
            "NEKOFLOW_MEMORY_EMBEDDINGS_MODEL": "fake-embed",
            "NEKOFLOW_MEMORY_EMBEDDINGS_API_KEY": "sk-embed-secret",
        }
        workers.start(extra_env=env, queues="turns,llm,outbound,memory")
        first = enqueue_turn("web", web_event("我养了一只猫,叫年糕"))
        assert first.wait(timeout=60) is not None and first.status() == "done", workers.logs()

        def embedded() -> bool:
            with Session(live.engine) as s:
                rows = s.exec(select(MemoryRecord)).all()
            return bool(rows) and all(r.embedding_model == "fake-embed" for r in rows)

        wait_for(embedded, 30, "the memory task to store the vectors", workers.logs)
        with Session(live.engine) as s:
            cats = s.exec(
                select(MemoryRecord).where(col(MemoryRecord.content).contains("年糕"))
            ).all()  # the turn's memory and the stated fact (用户的猫的名字:年糕)
        assert cats and all(cat.embedding for cat in cats)

        second = enqueue_turn("web", web_event("What is my kitten called?"))
        assert second.wait(timeout=60) is not None and second.status() == "done"
        with Session(live.engine) as s:
            before = s.get(TurnStage, (second.turn_id, "before_turn"))
        assert before is not None
        refs = before.result["memory_refs"]
        assert refs[0]["id"] in {cat.id for cat in cats}, refs
        assert any(body["input"] == ["What is my kitten called?"] for body in server.requests)
        assert set(server.auth) == {"Bearer sk-embed-secret"}
        logs = workers.logs()
        assert "sk-embed-secret" not in logs and "年糕" not in logs
