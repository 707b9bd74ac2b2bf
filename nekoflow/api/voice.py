"""The Web side of voice replies: ``GET /api/voice/{clip}`` serves a synthesized clip (same
auth as turn reads), :func:`voice_of_turn` lists a turn's voice parts with their URLs (the turn
result's ``voice``), and :func:`voice_events` streams a ``voice`` SSE event per part as it
settles, after the turn's final event."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Path
from fastapi.responses import Response
from sqlalchemy.engine import Engine
from starlette.concurrency import run_in_threadpool

from nekoflow.api.deps import ApiState, ReadAuth, StateDep
from nekoflow.api.errors import not_found
from nekoflow.api.schemas import ErrorResponse, VoiceOut
from nekoflow.speech import store
from nekoflow.speech.plan import MIME, PartState
from nekoflow.speech.settings import get_speech_settings
from nekoflow.turns import store as turn_store
from nekoflow.turns.voice_plan import planned_parts

router = APIRouter(tags=["voice"])

ClipPath = Annotated[str, Path(pattern=r"^[0-9a-f]{64}$", description="A clip's cache key.")]


def clip_url(key: str) -> str:
    """The URL of a clip."""
    return f"/api/voice/{key}"


def voice_of_turn(engine: Engine, turn_id: str) -> list[VoiceOut]:
    """The turn's voice parts, each with its URL once ready."""
    return [
        VoiceOut(
            part=p.part,
            state=p.state,
            url=clip_url(p.clip_key) if p.state == PartState.ready and p.clip_key else None,
            format=p.fmt,
            reason=p.reason,
        )
        for p in store.parts_for(engine, turn_id)
    ]


@router.get(
    "/api/voice/{clip}",
    dependencies=[ReadAuth],
    response_class=Response,
    responses={
        200: {"content": {"audio/mpeg": {}, "audio/ogg": {}, "audio/wav": {}}},
        401: {"model": ErrorResponse},
        404: {"model": ErrorResponse},
    },
    summary="A synthesized voice clip (from a turn's voice parts)",
)
async def get_clip(clip: ClipPath, state: StateDep) -> Response:
    """The clip's audio with its MIME type; 404 when unknown."""
    found = await run_in_threadpool(store.get_clip, state.engine, clip)
    if found is None:
        raise not_found("voice clip", clip, "clip")
    return Response(
        content=found.audio,
        media_type=MIME.get(found.fmt, "application/octet-stream"),
        headers={"Cache-Control": "private, max-age=86400"},
    )


def _expected(state: ApiState, turn_id: str) -> int:
    """How many voice parts the turn gets (0: none, do not wait)."""
    speech = get_speech_settings()
    run = turn_store.get_run(state.engine, turn_id)
    if run is None or not speech.enabled:
        return 0
    path = str(getattr(state.settings, "runtime_config_path", "config.ini"))
    return len(planned_parts(state.engine, speech, run, path))


async def voice_events(
    state: ApiState,
    turn_id: str,
    deadline: float,
    event_id: int,
    sse: Callable[[str, Any, int | None], str],
    pause: Callable[[float, float], Any],
) -> AsyncIterator[str]:
    """One ``voice`` event per part of a voiced turn as it settles (ready with its URL, or
    failed with the reason), until all settled, the speech wait or ``deadline`` runs out."""
    expected = await run_in_threadpool(_expected, state, turn_id)
    if not expected:
        return
    deadline = min(deadline, time.monotonic() + get_speech_settings().wait_seconds)
    sent: set[int] = set()
    delay = 0.05
    while len(sent) < expected and time.monotonic() < deadline:
        for part in await run_in_threadpool(voice_of_turn, state.engine, turn_id):
            if part.part in sent or part.state == PartState.awaiting:
                continue
            sent.add(part.part)
            yield sse("voice", {"turn_id": turn_id} | part.model_dump(mode="json"), event_id)
            event_id += 1
        if len(sent) < expected:
            delay = await pause(delay, deadline)
