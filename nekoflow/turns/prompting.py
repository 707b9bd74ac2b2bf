"""The system prompt of a turn: a PromptStack of profile, state, relationship, memories and
world book, in SPEC's priority order."""

from __future__ import annotations

from collections.abc import Sequence

from nekoflow.prompt import PromptStack
from nekoflow.worldbook import WorldBookEntry, inject_world_book

REPLY_FORMAT = (
    "用角色的口吻回复。每句话写成【情绪】内容<日语配音>(动作)的格式:"
    "情绪、配音和动作都可以省略,可以连续写多句。"
)

RELATIONSHIP_LABELS = {
    "affection": "好感",
    "trust": "信任",
    "familiarity": "熟悉",
    "dependency": "依赖",
    "security": "安全感",
    "jealousy": "嫉妒",
}


def relationship_text(values: dict[str, int]) -> str:
    """``好感 50/100,信任 60/100,…`` in a fixed order."""
    return ",".join(
        f"{label} {values.get(dim, 0)}/100" for dim, label in RELATIONSHIP_LABELS.items()
    )


def memories_text(memories: Sequence[tuple[str, str]], budget: int) -> tuple[str, int]:
    """Memory lines (``- title: content``) in the given order while they fit ``budget`` chars."""
    lines: list[str] = []
    used = 0
    for title, content in memories:
        line = f"- {title}: {content}".replace("\n", " ")
        if used + len(line) > budget:
            continue
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines), len(lines)


def build_system_prompt(
    *,
    role_name: str,
    profile: str,
    scene: dict[str, object],
    real_time_label: str | None,
    continuity: str | None,
    relationship: dict[str, int],
    memories: str,
    world_book: Sequence[WorldBookEntry],
    world_book_chars: int,
) -> str:
    """Render the turn's system prompt (base line + sections by ascending priority)."""
    stack = PromptStack()
    stack.add("behavior", REPLY_FORMAT, priority=PromptStack.PRIORITY_BEHAVIOR)
    stack.add("character.profile", profile, priority=PromptStack.PRIORITY_CHARACTER_PROFILE)
    if scene:
        state = ",".join(f"{k}: {v}" for k, v in scene.items())
        stack.add(
            "character.runtime_state",
            f"当前场景 {state}",
            priority=PromptStack.PRIORITY_RUNTIME_STATE,
        )
    if real_time_label and continuity and continuity != "continuous":
        text = (
            "这是你们的第一次对话。"
            if continuity == "first_contact"
            else (f"距离上次对话已经过去{real_time_label}。")
        )
        stack.add("real_time.continuity", text, priority=PromptStack.PRIORITY_REAL_TIME_CONTINUITY)
    stack.add(
        "character.relationship",
        relationship_text(relationship),
        priority=PromptStack.PRIORITY_RELATIONSHIP,
    )
    stack.add("character.memories", memories, priority=PromptStack.PRIORITY_MEMORIES)
    inject_world_book(stack, list(world_book), max_total_chars=world_book_chars)
    return stack.render(f"你是{role_name}。")
