"""The recent-history window sized by tokens, and the prompt's memory block. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from nekoflow.memory.scoring import Scored, memory_line, prompt_line

__all__ = ["line_text", "memory_block", "round_line", "window"]


def line_text(row: Any) -> str:
    """The text of a dialogue line that reaches the model (content and action)."""
    content = getattr(row, "content", None) or ""
    action = getattr(row, "action_content", None) or ""
    return f"{content} {action}" if action else content


def window(rows: Sequence[Any], budget: int, count: Callable[[str], int]) -> list[Any]:
    """The newest lines (root first) whose estimated tokens fit ``budget`` (at least one line)."""
    used = 0
    start = len(rows)
    for i in range(len(rows) - 1, -1, -1):
        cost = count(line_text(rows[i])) + 4  # role and name overhead per message
        if used + cost > budget and start < len(rows):
            break
        used += cost
        start = i
    return list(rows[start:])


def round_line(day: str, user: str, reply: str) -> str:
    """A past round as one prompt line: its date, what the user said and the reply's start."""
    text = f"- [{day} 对话] 用户: {user}"
    return f"{text} / 回复: {reply}" if reply else text


def memory_block(
    summaries: Sequence[tuple[str, str]],
    memories: Sequence[Scored],
    rounds: Sequence[str] = (),
) -> str:
    """The memories section: summaries of the past (oldest first), retrieved memories, then
    the relevant past rounds (already rendered by :func:`round_line`)."""
    lines = [memory_line("[往事]", text) for _, text in summaries]
    lines += [prompt_line(s.candidate) for s in memories]
    lines += list(rounds)
    return "\n".join(lines)
