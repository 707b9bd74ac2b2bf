"""The Web channel over HTTP: ``POST /api/web/chat`` and a turn's server-sent-event stream.

``POST /api/web/chat`` (bearer token: it spends model tokens) turns a session message into a Web
adapter event and submits it as a turn. With ``wait`` > 0 it waits up to that many seconds (max
60) and answers 200 with the reply messages when the turn finished in time (``done``; a ``failed``
turn answers its failure reply), else 202 with the turn id to poll (``turn_url``) or stream
(``events_url``). A message that is not a turn (channel disabled…) answers 200 ``skipped``.

``GET /api/turns/{turn_id}/events`` (a read: the bearer token unless public reads are on) is a
``text/event-stream``: a ``status`` event at once and on
every change of status, stage or finished stages, then one final event named after the outcome
(``done``, ``failed``, ``skipped``) carrying the whole turn — followed, for a voiced reply, by
one ``voice`` event per voiced line as it settles (its audio URL, or the reason it failed) —
or ``timeout`` when the turn has not
finished after ``timeout`` seconds (default 120, max 600). Comment lines keep idle proxies open.
While the model writes the reply, ``token`` events carry its pieces as they arrive (``{"attempt",
"seq", "offset", "text"}``, ``"end": true`` on the attempt's last one); a ``reset`` event
(``{"attempt"}``) says the text so far is void (the attempt failed and is retried). The pieces
after the last reset add up to the reply's raw text; the final event carries the stored reply.

Nothing here blocks the event loop: database calls run in the thread pool, waits are asyncio sleeps.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, status
from fastapi.responses import StreamingResponse
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from nekoflow.api.deps import ApiState, ReadAuth, StateDep, WriteAuth
from nekoflow.api.errors import not_found
from nekoflow.api.schemas import (
    MAX_STREAM_SECONDS,
    ErrorResponse,
    TurnIdPath,
    TurnOut,
    WebChatIn,
    WebChatReply,
)
from nekoflow.api.turns import load_turn, ok_json, submit_event
from nekoflow.api.voice import voice_events
from nekoflow.errors import InputError
from nekoflow.storage.turns import FINISHED
from nekoflow.turns.characters import resolve_role
from nekoflow.turns.handle import TurnHandle
from nekoflow.turns.notify import notifier_for
from nekoflow.turns.stream import AsyncTokenSubscription

router = APIRouter(tags=["web"])

POLL_FIRST = 0.05
"""First pause between two reads of a turn (seconds); it grows to :data:`POLL_MAX`."""
POLL_MAX = 0.5
KEEPALIVE_SECONDS = 15.0
"""An SSE comment line is sent after this long without an event."""
DEFAULT_STREAM_SECONDS = 120.0

_E = ErrorResponse
_CHAT: dict[int | str, dict[str, Any]] = {
    200: {"model": WebChatReply, "description": "Finished (reply in messages) or skipped"},
    401: {"model": _E, "description": "Missing or wrong bearer token"},
    503: {"model": _E, "description": "Token, database or channel configuration missing"},
}
_EVENTS: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
        "description": "status, token and reset events, then done | failed | skipped | timeout",
    },
    401: {"model": _E, "description": "Missing or wrong bearer token"},
    404: {"model": _E, "description": "Unknown turn"},
    503: {"model": _E, "description": "Reads closed: NEKOFLOW_API_TOKEN not configured"},
}


async def _pause(delay: float, deadline: float) -> float:
    """Sleep ``delay`` (never past ``deadline``); return the next, longer delay."""
    await asyncio.sleep(max(0.0, min(delay, deadline - time.monotonic())))
    return min(delay * 1.5, POLL_MAX)


def _reply(turn: TurnOut | None, handle: TurnHandle) -> WebChatReply:
    base = f"/api/turns/{handle.turn_id}"
    if turn is None:  # the row vanished (deleted): report what the handle knows
        return WebChatReply(turn_id=handle.turn_id, status="queued", turn_url=base)
    finished = turn.status in FINISHED
    return WebChatReply(
        turn_id=turn.turn_id,
        status=turn.status,
        reason=turn.reason,
        messages=list(turn.rendered or []) if finished else [],
        turn_url=base,
        events_url=f"{base}/events",
    )


@router.post(
    "/api/web/chat",
    response_model=WebChatReply,
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[WriteAuth],
    responses=_CHAT,
    summary="Send a Web-session message; wait for the reply or get the turn id",
)
async def web_chat(body: WebChatIn, state: StateDep) -> Any:
    """200 with the reply when the turn finished within ``wait`` seconds, else 202 to poll."""
    if not body.message.strip() and not body.attachments:
        raise InputError("must not be empty (send text or attachments)", field="message")
    if body.character_id is not None and body.character_id.strip():
        known = await run_in_threadpool(_character_exists, state, body.character_id)
        if not known:
            raise InputError(
                f"no character with id or name {body.character_id!r}", field="character_id"
            )
    deps = await run_in_threadpool(state.turns)
    handle = await run_in_threadpool(submit_event, deps, "web", body.event(), field_prefix="")
    if handle.is_skipped:
        skipped = WebChatReply(status="skipped", reason=handle.reason)
        return ok_json(skipped)
    assert handle.turn_id is not None
    deadline = time.monotonic() + body.wait
    delay = POLL_FIRST
    while True:
        turn = await run_in_threadpool(load_turn, state.engine, handle.turn_id)
        if turn is not None and turn.status in FINISHED:
            return ok_json(_reply(turn, handle))
        if time.monotonic() >= deadline:
            return _reply(turn, handle)
        delay = await _pause(delay, deadline)


def _character_exists(state: ApiState, character_id: str) -> bool:
    """True when ``character_id`` names a character (numeric id or name), as dispatch reads it."""
    with Session(state.engine) as session:
        return resolve_role(session, character_id) is not None


def sse(event: str, data: Any, event_id: int | None = None) -> str:
    """One server-sent event: ``event:``, optional ``id:``, and ``data:`` as one JSON line."""
    head = f"event: {event}\n" + (f"id: {event_id}\n" if event_id is not None else "")
    return head + f"data: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


def _progress(turn: TurnOut) -> tuple[Any, ...]:
    return (turn.status, turn.stage, tuple(s.stage for s in turn.stages), turn.reason)


async def _subscribe(state: ApiState, turn_id: str) -> AsyncTokenSubscription | None:
    """The turn's reply tokens and end on Redis pub/sub (None without Redis: poll only)."""
    settings = state.settings
    if not settings.redis_configured:
        return None
    end_notice = notifier_for(settings) is not None  # workers announce ends on Redis
    sub = AsyncTokenSubscription(
        settings.redis_url, settings.redis_prefix, turn_id, end_notice=end_notice
    )
    await sub.open()
    return sub if sub.active else None


async def turn_events(state: ApiState, first: TurnOut, timeout: float) -> AsyncIterator[str]:
    """The event stream of a turn, from ``first`` (its state now) to its end or ``timeout``.

    Subscribes to the turn's tokens before reading it again, so no token slips between the
    read and the subscription. A client that goes away cancels it (Starlette stops the
    response on disconnect).
    """
    deadline = time.monotonic() + timeout
    sub = await _subscribe(state, first.turn_id)
    try:
        turn: TurnOut | None = first
        if sub is not None:
            turn = await run_in_threadpool(load_turn, state.engine, first.turn_id)
        seen: tuple[Any, ...] | None = None
        last_sent = time.monotonic()
        delay = POLL_FIRST
        n = 0
        while True:
            if turn is None:
                yield sse("failed", {"turn_id": first.turn_id, "reason": "turn deleted"}, n)
                return
            if turn.status in FINISHED:
                # seen: it ran after we subscribed, so pieces may still be on their way
                for token in await sub.drain() if sub is not None and seen else []:
                    yield sse(token.kind, token.data(), n)
                    n += 1
                yield sse(turn.status, turn.model_dump(mode="json"), n)
                n += 1
                async for event in delivery_events(state, turn, deadline, n):
                    yield event
                    n += 1
                async for event in voice_events(state, turn.turn_id, deadline, n, sse, _pause):
                    yield event
                return
            if _progress(turn) != seen:
                seen = _progress(turn)
                yield sse("status", turn.model_dump(mode="json"), n)
                n += 1
                last_sent = time.monotonic()
            elif time.monotonic() - last_sent >= KEEPALIVE_SECONDS:
                yield ": keepalive\n\n"
                last_sent = time.monotonic()
            if time.monotonic() >= deadline:
                yield sse("timeout", turn.model_dump(mode="json"), n)
                return
            if sub is None:
                delay = await _pause(delay, deadline)
            else:  # until the next read of the turn: its tokens as they arrive
                until = min(time.monotonic() + delay, deadline)
                delay = min(delay * 1.5, POLL_MAX)
                while (left := until - time.monotonic()) > 0:
                    events, ended = await sub.next(left)
                    for event in events:
                        yield sse(event.kind, event.data(), n)
                        n += 1
                        last_sent = time.monotonic()
                    if ended:
                        break
            turn = await run_in_threadpool(load_turn, state.engine, first.turn_id)
    finally:
        if sub is not None:
            await sub.aclose()


_DELIVERY_OPEN = ("pending", "sending")


async def delivery_events(
    state: ApiState, turn: TurnOut, deadline: float, event_id: int
) -> AsyncIterator[str]:
    """After a finished turn whose reply is still being sent: one ``delivery`` event when the
    delivery settles (sent, handed_over or failed, with the reason), unless ``deadline`` comes
    first."""
    delay = POLL_FIRST
    current: TurnOut | None = turn
    while current is not None and current.delivery_status in _DELIVERY_OPEN:
        if time.monotonic() >= deadline:
            return
        delay = await _pause(delay, deadline)
        current = await run_in_threadpool(load_turn, state.engine, turn.turn_id)
    settled = current.delivery_status if current is not None else None
    if current is not None and settled is not None and turn.delivery_status in _DELIVERY_OPEN:
        data = {
            "turn_id": current.turn_id,
            "delivery_status": current.delivery_status,
            "delivery_reason": current.delivery_reason,
        }
        yield sse("delivery", data, event_id)


@router.get(
    "/api/turns/{turn_id}/events",
    response_class=StreamingResponse,
    dependencies=[ReadAuth],
    responses=_EVENTS,
    summary="Server-sent events of a turn's progress, ending with its outcome",
)
async def turn_event_stream(
    turn_id: TurnIdPath,
    state: StateDep,
    timeout: Annotated[
        float, Query(gt=0, le=MAX_STREAM_SECONDS, description="Close after this many seconds")
    ] = DEFAULT_STREAM_SECONDS,
) -> StreamingResponse:
    """A ``text/event-stream`` of the turn's stage changes; 404 for an unknown turn."""
    first = await run_in_threadpool(load_turn, state.engine, turn_id)
    if first is None:
        raise not_found("turn", turn_id, "turn_id")
    return StreamingResponse(
        turn_events(state, first, timeout),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
