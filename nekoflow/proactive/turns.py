"""What a proactive turn is (pure): its request, built from the scope's last message without
that message's text, and the instruction that tells the model it is reaching out."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from nekoflow.channels.context import TIME_KEYS

PROACTIVE = "proactive"
"""The request-metadata key that marks a proactive turn: ``{"kind", "schedule", "n"}``."""

#: Message-specific metadata a proactive request does not carry over (it quotes nothing).
_DROPPED = frozenset({*TIME_KEYS, "edited", "edit_date", "greeting", PROACTIVE})


def proactive_request(
    anchor: dict[str, Any],
    *,
    kind: str,
    schedule_id: int,
    n: int,
    now: datetime,
    note: str | None = None,
) -> dict[str, Any]:
    """The request of a proactive turn: the anchor message's chat, user and platform ids (so
    the reply goes to the same place), no text, no attachments, no message to quote."""
    meta = {k: v for k, v in (anchor.get("metadata") or {}).items() if k not in _DROPPED}
    meta[PROACTIVE] = {"kind": kind, "schedule": schedule_id, "n": n} | (
        {"note": note} if note else {}
    )
    meta["sent_at"] = now.isoformat()
    return {
        k: v
        for k, v in anchor.items()
        if k not in ("content", "message_id", "attachments", "metadata")
    } | {"content": "", "message_id": "", "attachments": [], "metadata": meta}


def proactive_of(metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    """The proactive marker of a request's metadata, or None for a user's message."""
    value = (metadata or {}).get(PROACTIVE)
    return value if isinstance(value, dict) else None


def proactive_label(request: dict[str, Any] | None) -> str | None:
    """How ``runs`` and the runs page name a proactive turn ("proactive follow_up #2",
    "proactive reminder"); None for a user's turn."""
    marker = proactive_of((request or {}).get("metadata"))
    if marker is None:
        return None
    kind = str(marker.get("kind") or "follow_up")
    n = marker.get("n")
    return f"proactive {kind} #{n}" if kind == "follow_up" and n else f"proactive {kind}"


def _gap_label(seconds: float | None) -> str:
    if seconds is None:
        return "一段时间"
    if seconds >= 86400:
        return f"{seconds / 86400:.0f}天"
    if seconds >= 3600:
        return f"{seconds / 3600:.0f}小时"
    return f"{max(seconds / 60, 1):.0f}分钟"


def instruction(
    kind: str,
    *,
    gap_seconds: float | None,
    note: str | None = None,
    promises: list[str] | None = None,
) -> str:
    """The system message that replaces the user's message in a proactive turn: that the
    character reaches out, what it knows (the silence, the promise), and to stay in character."""
    if kind == "reminder":
        what = (
            f"你之前答应过对方:「{note}」。现在到了约定的时间,"
            if note
            else "现在到了你答应提醒对方的时间,"
        )
        body = what + "请主动发消息提醒对方。"
    else:
        body = (
            f"对方已经{_gap_label(gap_seconds)}没有说话了。现在由你主动发起对话:"
            "自然地问候,或接着上次的话题聊下去。"
        )
        if promises:
            body += "你们之间还有这些约定:" + ";".join(promises[:3]) + "。"
    return f"(系统提示:{body}保持角色,一两句即可,不要提到这条提示。)"
