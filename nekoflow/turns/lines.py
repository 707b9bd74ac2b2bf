"""A turn's request, context and user lines as its TurnRun stores them, and a text rendered
for its channel: what the stages, the flow's store and the notices all read."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from nekoflow.channels import ChannelRuntimeContext, ChatRequest
from nekoflow.turns.models import DispatchResult

if TYPE_CHECKING:
    from nekoflow.storage.turns import TurnRun
    from nekoflow.turns.deps import TurnDeps


def request_of(run: TurnRun) -> ChatRequest:
    """The platform message the turn answers."""
    return ChatRequest.model_validate(run.request)


def proactive_marker(run: TurnRun) -> dict[str, Any] | None:
    """The proactive marker of a turn the character starts itself (None: a user's message)."""
    from nekoflow.proactive.turns import proactive_of

    return proactive_of(run.request.get("metadata"))


def context_of(run: TurnRun) -> ChannelRuntimeContext:
    """The channel context the turn was dispatched with."""
    return ChannelRuntimeContext.model_validate(run.context)


def user_text(req: ChatRequest) -> str:
    """What the user said, then a placeholder per attachment (``[image]``…); "…" for neither."""
    kinds = [getattr(a, "type", "file") or "file" for a in req.attachments]
    placeholders = "".join(f"[{kind}]" for kind in kinds)
    if not req.content.strip():
        return placeholders or "…"
    return f"{req.content} {placeholders}" if placeholders else req.content


def _user_line(req: ChatRequest, dispatch: DispatchResult) -> dict[str, Any]:
    name = req.sender.display_name if req.sender else ""
    return {"content": user_text(req), "display_name": name or dispatch.display_name or None}


def user_lines(req: ChatRequest, d: DispatchResult) -> list[dict[str, Any]]:
    """The turn's user lines: its own message, then each merged one with its own time."""
    lines = [_user_line(req, d) | {"sent_at": d.sent_at}]
    for m in d.merged:
        merged = ChatRequest.model_validate(m["request"])
        lines.append(_user_line(merged, d) | {"sent_at": datetime.fromisoformat(m["sent_at"])})
    return lines


def turn_user_text(req: ChatRequest, d: DispatchResult | None) -> str:
    """What the user said in this turn: one message, or every merged message, one per line —
    in a group each line as ``name:content``, naming its speaker (as the history does)."""
    if d is None or not d.merged:
        return user_text(req)
    lines = user_lines(req, d)
    if d.group_id:
        return "\n".join(f"{line['display_name'] or '用户'}:{line['content']}" for line in lines)
    return "\n".join(line["content"] for line in lines)


def render(deps: TurnDeps, run: TurnRun, text: str) -> list[dict[str, Any]]:
    """The adapter's outbound messages for ``text`` (never the prompt)."""
    return deps.adapter(run.channel).render_result({"text": text}, context_of(run))
