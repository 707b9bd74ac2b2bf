"""Everything the stage functions need, passed in (so they stay plain Python and testable)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from nekoflow.channels import (
    CharacterRuntimeContextDispatcher,
    load_runtime_config,
)
from nekoflow.channels.adapters import BaseChannelAdapter, get_adapter
from nekoflow.events import EventBus, NullEventBus
from nekoflow.llm.base import ChatModel
from nekoflow.review.pipeline import ReviewPipeline
from nekoflow.settings import Settings
from nekoflow.storage.turns import TurnRun
from nekoflow.worldbook.cooldowns import Cooldowns, InMemoryCooldowns
from nekoflow.worldbook.models import WorldBookRecallConfig

Publisher = Callable[[TurnRun], None]
"""Publishes a turn's chain (the Celery shell provides it; tests may record calls)."""


def _no_publisher(run: TurnRun) -> None:
    raise RuntimeError(f"no publisher configured to start turn {run.turn_id}")


@dataclass
class TurnDeps:
    """The collaborators of a turn: storage, model, review, cooldowns, channels, publishing."""

    settings: Settings
    engine: Engine
    chat_model: ChatModel
    review: ReviewPipeline
    cooldowns: Cooldowns
    dispatcher: CharacterRuntimeContextDispatcher
    events: EventBus = field(default_factory=NullEventBus)
    publish: Publisher = _no_publisher
    recall_config: WorldBookRecallConfig = field(default_factory=WorldBookRecallConfig)
    _adapters: dict[str, BaseChannelAdapter] = field(default_factory=dict)

    def adapter(self, channel: str) -> BaseChannelAdapter:
        """The adapter for ``channel``, built once with ``settings.adapter_options[channel]``."""
        key = channel.strip().lower()
        if key not in self._adapters:
            options: dict[str, Any] = dict(self.settings.adapter_options.get(key, {}))
            self._adapters[key] = get_adapter(key, **options)
        return self._adapters[key]

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        engine: Engine | None = None,
        publish: Publisher | None = None,
        chat_model: ChatModel | None = None,
        cooldowns: Cooldowns | None = None,
        events: EventBus | None = None,
    ) -> TurnDeps:
        """Build the production collaborators described by ``settings``."""
        from nekoflow.llm.factory import make_chat_model
        from nekoflow.review.autostate import AutoStateCache
        from nekoflow.storage import create_all, make_engine

        if engine is None:
            engine = make_engine(settings.database_url, echo=settings.database_echo)
            create_all(engine)
        redis_client = None
        needs_redis = (
            (cooldowns is None and settings.uses_redis_cooldowns)
            or settings.autostate_backend == "redis"
            or (events is None and settings.event_bus == "redis")
        )
        if needs_redis:
            from nekoflow.redis_client import make_redis

            redis_client = make_redis(settings.redis_url)
        if cooldowns is None:
            if settings.uses_redis_cooldowns:
                from nekoflow.worldbook.redis_cooldowns import RedisCooldowns

                cooldowns = RedisCooldowns(redis_client, prefix=settings.redis_prefix)
            else:
                cooldowns = InMemoryCooldowns()
        if events is None:
            if settings.event_bus == "redis":
                from nekoflow.events_redis import RedisEventBus

                events = RedisEventBus(redis_client, prefix=settings.redis_prefix)
            else:
                events = NullEventBus()
        autostate: AutoStateCache | None = None
        if settings.autostate_backend == "redis":
            from nekoflow.review.autostate_redis import RedisAutoState

            autostate = RedisAutoState(
                redis_client,
                prefix=settings.redis_prefix,
                ttl_seconds=settings.autostate_ttl_seconds,
            )
        model = chat_model or make_chat_model(settings)
        review = ReviewPipeline(
            mode=settings.review_mode, event_bus=events, llm=model, autostate=autostate
        )
        dispatcher = CharacterRuntimeContextDispatcher(
            load_runtime_config(settings.runtime_config_path, missing_ok=True)
        )
        return cls(
            settings=settings,
            engine=engine,
            chat_model=model,
            review=review,
            cooldowns=cooldowns,
            dispatcher=dispatcher,
            events=events,
            publish=publish or _no_publisher,
            recall_config=WorldBookRecallConfig(recent_message_limit=settings.recent_message_limit),
        )
