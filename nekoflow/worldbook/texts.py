"""The texts a recall scans: the user message, recent assistant text, history, a depth window."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nekoflow.worldbook.models import WorldBookRecallConfig, WorldBookRecallContext

#: Source name → (text, text.lower()).
Texts = dict[str, tuple[str, str]]


def assistant_recent_text(messages: Sequence[Mapping[str, Any]], limit: int) -> str:
    """The last ``limit`` non-empty assistant messages, oldest first, joined by newlines."""
    picked: list[str] = []
    for msg in reversed(messages):
        if len(picked) >= limit:
            break
        content = msg.get("content")
        if msg.get("role") == "assistant" and isinstance(content, str) and content:
            picked.append(content)
    return "\n".join(reversed(picked))


def history_text(messages: Sequence[Mapping[str, Any]], max_chars: int) -> str:
    """Newest messages (any role) back until their contents would pass ``max_chars``, joined."""
    picked: list[str] = []
    total = 0
    for msg in reversed(messages):
        content = msg.get("content")
        if not isinstance(content, str) or not content:
            continue
        if total + len(content) > max_chars:
            break
        picked.append(content)
        total += len(content)
    return "\n".join(reversed(picked))


def scene_matches(scene: Mapping[str, Any], state_triggers: Mapping[str, Sequence[str]]) -> bool:
    """True when any trigger field matches: string value listed, or list value sharing one."""
    for field, allowed in state_triggers.items():
        value = scene.get(field)
        if isinstance(value, str):
            if value in allowed:
                return True
        elif isinstance(value, list | tuple | set | frozenset) and any(
            isinstance(v, str) and v in allowed for v in value
        ):
            return True
    return False


def _pair(text: str) -> tuple[str, str]:
    return text, text.lower()


def scan_texts(
    context: WorldBookRecallContext, config: WorldBookRecallConfig, depth: int | None
) -> Texts:
    """The source texts scanned at ``depth`` (None: the engine's windows, as the seed does).

    With a depth N (SillyTavern's scan depth) the user message counts as the first message and
    the N-1 newest earlier messages form the history (and, among them, the assistant messages
    the assistant source); depth 0 scans nothing. Windows given as ready texts
    (``context.assistant_recent_text`` / ``history_text``) cannot be cut by depth and are used
    as given.
    """
    user = context.latest_user_message
    texts: Texts = {}
    if depth is None:
        assistant = context.assistant_recent_text or assistant_recent_text(
            context.recent_messages, config.recent_message_limit
        )
        history = context.history_text or history_text(
            context.recent_messages, config.max_history_chars
        )
    else:
        if depth == 0:
            return texts
        window = context.recent_messages[-(depth - 1) :] if depth > 1 else []
        assistant = context.assistant_recent_text or assistant_recent_text(
            window, config.recent_message_limit
        )
        history = context.history_text or "\n".join(
            m["content"] for m in window if isinstance(m.get("content"), str) and m["content"]
        )
    if user:
        texts["user"] = _pair(user)
    if assistant and config.enable_assistant_trigger:
        texts["assistant_recent"] = _pair(assistant)
    if history and config.enable_history_trigger:
        texts["history"] = _pair(history)
    return texts
