"""``get_review_pipeline``: a :class:`ReviewPipeline` wired from the settings (the Redis
AutoState and event bus when configured) — the shell around the pure pipeline."""

from __future__ import annotations

from typing import Literal

from nekoflow.events import EventBus
from nekoflow.llm.base import ChatModel
from nekoflow.review.autostate import AutoStateCache
from nekoflow.review.pipeline import ReviewPipeline


def get_review_pipeline(
    event_bus: EventBus | None = None,
    *,
    mode: Literal["rule", "llm"] | None = None,
    llm: ChatModel | None = None,
) -> ReviewPipeline:
    """A pipeline configured from settings: review mode, AutoState backend and, when no
    ``event_bus`` is given and ``NEKOFLOW_EVENT_BUS=redis``, the Redis pub/sub bus."""
    from nekoflow.settings import get_settings

    settings = get_settings()
    autostate: AutoStateCache | None = None
    if settings.effective_autostate_backend == "redis" or (
        event_bus is None and settings.effective_event_bus == "redis"
    ):
        from nekoflow.redis_client import make_redis

        client = make_redis(settings.redis_url)
        if settings.effective_autostate_backend == "redis":
            from nekoflow.review.autostate_redis import RedisAutoState

            autostate = RedisAutoState(
                client, prefix=settings.redis_prefix, ttl_seconds=settings.autostate_ttl_seconds
            )
        if event_bus is None and settings.effective_event_bus == "redis":
            from nekoflow.events_redis import RedisEventBus

            event_bus = RedisEventBus(client, prefix=settings.redis_prefix)
    from nekoflow.llm.factory import make_chat_model

    return ReviewPipeline(
        mode=mode or settings.review_mode,
        event_bus=event_bus,
        llm=llm,
        autostate=autostate,
        llm_factory=lambda: make_chat_model(settings),
    )
