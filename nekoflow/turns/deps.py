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
from nekoflow.delivery.ratelimit import InMemoryRateLimiter, RateLimiter
from nekoflow.events import EventBus, NullEventBus
from nekoflow.flow.policy import FlowConfig, load_flow_config
from nekoflow.llm.base import ChatModel
from nekoflow.proactive.config import ProactiveConfig, load_proactive_config
from nekoflow.review.pipeline import ReviewPipeline
from nekoflow.settings import Settings
from nekoflow.storage.turns import TurnRun
from nekoflow.usage.meter import MeteredChatModel
from nekoflow.usage.quota_redis import QuotaCounters
from nekoflow.worldbook.budgets import recall_config_of
from nekoflow.worldbook.cooldowns import Cooldowns, InMemoryCooldowns
from nekoflow.worldbook.models import WorldBookRecallConfig

Publisher = Callable[[TurnRun], None]
"""Publishes a turn's chain (the Celery shell provides it; tests may record calls)."""


def _no_publisher(run: TurnRun) -> None:
    raise RuntimeError(f"no publisher configured to start turn {run.turn_id}")


class _NamedModel:
    """A chat model whose replies report another model name (the scripted stand-in)."""

    def __init__(self, inner: ChatModel, name: str) -> None:
        self.inner, self.name = inner, name

    def complete(self, messages: Any, **kwargs: Any) -> Any:
        """The inner model's reply, reported as coming from ``name``."""
        return self.inner.complete(messages, **kwargs).model_copy(update={"model": self.name})


def _bot_options(channel: str, bot: str | None) -> dict[str, Any]:
    """Adapter options a platform bot's own settings give (the platform registers them): a
    Telegram bot's ``bot_username`` (``NEKOFLOW_TELEGRAM_BOT_USERNAME`` or its
    ``NEKOFLOW_TELEGRAM_BOTS`` entry), so group @mentions of that bot count."""
    from nekoflow.delivery.registry import bot_options_for

    return bot_options_for(channel, bot)


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
    #: Conversation-flow policies (``[conversation_flow*]`` in config.ini) and the limiter
    #: their rate limits use (Redis across enqueuers when Redis is configured).
    flow: FlowConfig = field(default_factory=FlowConfig)
    rate_limiter: RateLimiter = field(default_factory=InMemoryRateLimiter)
    #: What the character may start itself (``[proactive*]`` in config.ini): greetings,
    #: follow-ups after silence, promised reminders.
    proactive: ProactiveConfig = field(default_factory=ProactiveConfig)
    #: Today's token totals for quota checks, cached in Redis (None: read from SQL each time).
    quota_counters: QuotaCounters | None = None
    _adapters: dict[str, BaseChannelAdapter] = field(default_factory=dict)
    _models: dict[str, ChatModel] = field(default_factory=dict)

    def model_named(self, name: str) -> ChatModel:
        """This deployment's provider serving model ``name`` (a quota's fallback model)."""
        if name not in self._models:
            if self.settings.effective_llm_provider == "openai":
                from nekoflow.llm.factory import make_chat_model

                self._models[name] = make_chat_model(
                    self.settings.model_copy(update={"llm_model": name})
                )
            else:  # the offline scripted model: the same replies, reported under that name
                self._models[name] = _NamedModel(self.chat_model, name)
        return self._models[name]

    def adapter(self, channel: str, bot: str | None = None) -> BaseChannelAdapter:
        """The adapter for ``channel`` (as ``bot`` of that platform sees events), built once
        with ``settings.adapter_options[channel]`` and the bot's own options (its username)."""
        key = channel.strip().lower()
        own = _bot_options(key, bot)
        cache = f"{key}@{bot}" if own else key
        if cache not in self._adapters:
            options: dict[str, Any] = dict(self.settings.adapter_options.get(key, {})) | own
            self._adapters[cache] = get_adapter(key, **options)
        return self._adapters[cache]

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
            engine = make_engine(settings.database_url, **settings.engine_options())
            create_all(engine)
        redis_client = None
        needs_redis = (
            (cooldowns is None and settings.uses_redis_cooldowns)
            or settings.effective_autostate_backend == "redis"
            or (events is None and settings.effective_event_bus == "redis")
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
            if settings.effective_event_bus == "redis":
                from nekoflow.events_redis import RedisEventBus

                events = RedisEventBus(redis_client, prefix=settings.redis_prefix)
            else:
                events = NullEventBus()
        autostate: AutoStateCache | None = None
        if settings.effective_autostate_backend == "redis":
            from nekoflow.review.autostate_redis import RedisAutoState

            autostate = RedisAutoState(
                redis_client,
                prefix=settings.redis_prefix,
                ttl_seconds=settings.autostate_ttl_seconds,
            )
        model = chat_model or make_chat_model(settings)
        review = ReviewPipeline(
            mode=settings.review_mode,
            event_bus=events,
            llm=MeteredChatModel(model),  # the review stage counts what its calls cost
            autostate=autostate,
        )
        dispatcher = CharacterRuntimeContextDispatcher(
            load_runtime_config(settings.runtime_config_path, missing_ok=True)
        )
        flow = load_flow_config(settings.runtime_config_path)
        limiter: RateLimiter = InMemoryRateLimiter()
        counters: QuotaCounters | None = None
        if settings.uses_redis_cooldowns:  # shared state lives in Redis: so do rate limits
            from nekoflow.delivery.ratelimit_redis import RedisRateLimiter
            from nekoflow.redis_client import make_redis

            client = redis_client or make_redis(settings.redis_url)
            limiter = RedisRateLimiter(client, prefix=settings.redis_prefix)
            counters = QuotaCounters(client, prefix=settings.redis_prefix)
        return cls(
            settings=settings,
            engine=engine,
            chat_model=model,
            review=review,
            cooldowns=cooldowns,
            dispatcher=dispatcher,
            events=events,
            publish=publish or _no_publisher,
            recall_config=recall_config_of(settings),
            flow=flow,
            proactive=load_proactive_config(settings.runtime_config_path),
            rate_limiter=limiter,
            quota_counters=counters,
        )
