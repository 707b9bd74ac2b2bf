"""Conversation memory: the dialogue-tree history and the builder that turns it into LLM messages.

Import surface: ``build_memory``, ``parse_reply``, ``format_reply``, ``ReplySegment``. The SQL
side (active path, turn writes) lives in :mod:`nekoflow.memory.history` and is not imported here,
so the pure builder stays free of SQL.
"""

from nekoflow.memory.builder import build_memory
from nekoflow.memory.reply import ReplySegment, format_reply, parse_reply

__all__ = ["ReplySegment", "build_memory", "format_reply", "parse_reply"]
