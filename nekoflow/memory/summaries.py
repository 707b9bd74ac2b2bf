"""SQL shell of summaries: summarise a save's oldest unsummarised span that lies outside the
recent window into a ``summary`` memory (what the ``memory`` queue's task runs).

Reads only the newest lines it needs (the window, the span and the lines back to the last
summarised one), not the whole conversation, once summaries keep up with it. A fact the span
states that has since changed (a newer live fact of the same slot) is noted in the summary, so
it never presents the old value as current.

Idempotent: a summary is keyed by its span's first line (a unique index on ``(role_id,
scope_id, span_from_line)``, written with ``ON CONFLICT DO NOTHING``), so a retried or
duplicated task writes each summary once. The model writes the summary when one is given
(``NEKOFLOW_MEMORY_SUMMARY_MODE``), the rules when it is not or when it fails.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.llm.base import ChatModel, LLMError
from nekoflow.memory.fact_updates import notes_for_facts
from nekoflow.memory.history import load_history_rows
from nekoflow.memory.settings import MemorySettings
from nekoflow.memory.store import add_indexed
from nekoflow.memory.summarize import SpanLine, llm_messages, next_span, rule_summary, span_facts
from nekoflow.memory.window import line_text, window
from nekoflow.storage.dialogue import Role, Save, utcnow
from nekoflow.storage.turns import MemoryRecord
from nekoflow.tokens import estimate_tokens

__all__ = ["summarize_save"]

log = logging.getLogger(__name__)

SUMMARY_CHARS = 300
FIRST_READ = 512
"""Lines of the newest path a summary task reads first (four times more while it must)."""


def _role(row: Any) -> str:
    return {"assistant": "assistant", "system": "system"}.get(row.attribute, "user")


def _recent_rows(s: Session, save_id: int, settings: MemorySettings, done: set[int]) -> list[Any]:
    """The newest lines of the path (root first) the next spans need: the window, and back to
    the newest summarised line before it (the whole path while there is none)."""
    limit: int | None = max(FIRST_READ, settings.summary_span_lines * 4)
    room = settings.context_tokens - settings.prompt_tokens - settings.summary_tokens
    while True:
        rows = load_history_rows(s, save_id, limit=limit)
        if limit is None or len(rows) < limit:  # the whole path
            return rows
        keep_from = len(rows) - len(window(rows, settings.min_window_tokens, estimate_tokens))
        fits = len(window(rows, room, estimate_tokens)) == len(rows)
        if not fits and any(r.id in done for r in rows[:keep_from]):
            return rows
        limit = None if limit >= 1 << 20 else limit * 4  # type: ignore[operator]


def _speaker(row: Any, role_name: str) -> str:
    if row.attribute == "assistant":
        return row.display_name or role_name
    if row.attribute == "system":
        return "旁白"
    return row.display_name or "用户"


def _text(lines: Sequence[SpanLine], model: ChatModel | None) -> tuple[str, str]:
    """The summary and who wrote it ("llm" or "rule")."""
    if model is not None:
        try:
            reply = model.complete(llm_messages(lines, SUMMARY_CHARS), max_tokens=400)
            text = " ".join(reply.text.split())
            if text:
                return text[: SUMMARY_CHARS * 2], "llm"
        except (LLMError, TimeoutError, OSError) as exc:  # the rules still keep what matters
            log.warning("summary by the model failed (%s); using the rules", type(exc).__name__)
    return rule_summary(lines, SUMMARY_CHARS), "rule"


def summarize_save(
    engine: Engine,
    save_id: int,
    settings: MemorySettings,
    *,
    model: ChatModel | None = None,
    max_spans: int = 8,
) -> int:
    """Summarise up to ``max_spans`` spans of the save older than the window; summaries written."""
    written = 0
    with Session(engine) as s:
        save = s.get(Save, save_id)
        if save is None or save.last_message_id is None:
            return 0
        role = s.get(Role, save.role_id)
        done = set(
            s.exec(
                select(MemoryRecord.span_to_line).where(
                    col(MemoryRecord.role_id) == save.role_id,
                    col(MemoryRecord.scope_id) == save.scope_id,
                    col(MemoryRecord.kind) == "summary",
                )
            ).all()
        )
        rows = _recent_rows(s, save_id, settings, done)
        # History that fits the prompt's room for it needs no summary at all; beyond that,
        # everything older than the smallest window is summarised.
        room = settings.context_tokens - settings.prompt_tokens - settings.summary_tokens
        if len(window(rows, room, estimate_tokens)) == len(rows):
            return 0
        keep_from = len(rows) - len(window(rows, settings.min_window_tokens, estimate_tokens))
        ids = [r.id for r in rows]
        role_name = role.name if role is not None else "角色"
        for _ in range(max_spans):
            span = next_span(ids, keep_from, done, settings.summary_span_lines)
            if span is None:
                break
            part = rows[span[0] : span[1] + 1]
            lines = [SpanLine(r.id, _speaker(r, role_name), line_text(r), _role(r)) for r in part]
            text, by = _text(lines, model)
            stated = [fact for _ln, fact in span_facts(lines)]
            changed = notes_for_facts(s, save.role_id, save.scope_id, stated, utcnow())
            text = f"{text} {changed}" if changed else text
            values = {
                "role_id": save.role_id,
                "scope_id": save.scope_id,
                "kind": "summary",
                "target": "world",
                "title": "",
                "mem_type": f"summary:{by}",
                "content": text,
                "importance": 0.5,
                "ttl": "permanent",
                "expires_at": None,
                "created_at": part[-1].created_at,
                "updated_at": part[-1].created_at,
                "span_from_line": part[0].id,
                "span_to_line": part[-1].id,
                "access_count": 0,
                "mentions": 1,
            }
            insert: Any = pg_insert if s.get_bind().dialect.name == "postgresql" else sqlite_insert
            stmt = (
                insert(MemoryRecord)
                .values(**values)
                .on_conflict_do_nothing(index_elements=["role_id", "scope_id", "span_from_line"])
                .returning(col(MemoryRecord.id))
            )
            new_id = s.execute(stmt).scalar()
            if new_id is not None:  # retrievable by relevance like a fact (terms, statistics)
                row = s.get(MemoryRecord, new_id)
                assert row is not None
                add_indexed(s, [row])
                written += 1
            s.commit()  # one span per transaction: a crash keeps what was done
            done.add(part[-1].id)
    return written
