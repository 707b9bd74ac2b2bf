"""All runtime settings in one place, read from ``NEKOFLOW_*`` environment variables.

Every setting is documented in the README's "Configuration" table; keep the two in step.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_database_url() -> str:
    return f"sqlite:///{Path.cwd() / 'nekoflow.db'}"


class Settings(BaseSettings):
    """Process-wide configuration; tests build one, everything else calls :func:`get_settings`."""

    model_config = SettingsConfigDict(env_prefix="NEKOFLOW_", env_file=None, extra="ignore")

    # storage
    database_url: str = Field(default_factory=_default_database_url)
    database_echo: bool = False
    #: PostgreSQL: commit the results of the intermediate stages (dispatch … review) without
    #: waiting for the WAL flush. A server crash may then lose the last fraction of a second of
    #: such results; the sweeper re-runs those stages (all idempotent). Enqueue and
    #: apply_deltas always commit synchronously.
    database_async_stage_commits: bool = True

    # redis / celery
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_prefix: str = "nekoflow"
    broker_url: str | None = None
    result_backend: str | None = None
    broker_visibility_timeout: int = Field(default=3600, gt=0)

    # LLM
    llm_provider: Literal["scripted", "openai"] = "scripted"
    llm_base_url: str | None = None
    llm_model: str = "gpt-4o-mini"
    llm_api_key: SecretStr | None = None
    llm_timeout: float = Field(default=60.0, gt=0)
    llm_connect_timeout: float = Field(default=5.0, gt=0)
    llm_temperature: float | None = Field(default=0.8, ge=0, le=2)
    llm_max_tokens: int | None = Field(default=None, gt=0)
    llm_max_attempts: int = Field(default=4, ge=1)
    llm_backoff_base: float = Field(default=1.0, ge=0)
    llm_backoff_max: float = Field(default=30.0, ge=0)

    # review
    review_mode: Literal["rule", "llm"] = "rule"
    event_bus: Literal["memory", "redis"] = "memory"
    autostate_backend: Literal["memory", "redis"] = "memory"
    autostate_ttl_seconds: int = Field(default=7 * 24 * 3600, gt=0)
    # bulk re-review: LLM-mode calls per second across all workers (shared through Redis)
    rereview_llm_rate_per_second: float = Field(default=2.0, gt=0)

    # channels
    runtime_config_path: str = "config.ini"
    adapter_options: dict[str, dict[str, Any]] = Field(default_factory=dict)

    # turn pipeline
    cooldown_backend: Literal["auto", "memory", "redis"] = "auto"
    turn_lease_seconds: float = Field(default=300.0, gt=0)
    stage_max_attempts: int = Field(default=5, ge=1)
    sweep_interval_seconds: float = Field(default=30.0, gt=0)
    history_limit: int = Field(default=200, ge=1)
    recent_message_limit: int = Field(default=6, ge=0)
    memory_prompt_chars: int = Field(default=1200, ge=0)
    memory_short_ttl_days: float = Field(default=7.0, gt=0)
    memory_long_ttl_days: float = Field(default=180.0, gt=0)
    failure_reply: str = "抱歉,我刚刚走神了,能再说一遍吗?"

    # HTTP API
    # Bearer token required for write endpoints; when unset (or blank), writes are refused
    # with 503 "NEKOFLOW_API_TOKEN not configured".
    api_token: SecretStr | None = None
    # Origins allowed by CORS (JSON list in the environment); empty = CORS off.
    api_cors_origins: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _fill_celery_urls(self) -> Settings:
        if self.broker_url is None:
            self.broker_url = self.redis_url
        if self.result_backend is None:
            self.result_backend = self.redis_url
        return self

    @property
    def uses_redis_cooldowns(self) -> bool:
        """Whether world-book cooldowns live in Redis ("auto": when the broker is Redis)."""
        if self.cooldown_backend == "auto":
            return bool(self.broker_url and self.broker_url.startswith(("redis://", "rediss://")))
        return self.cooldown_backend == "redis"

    def redis_key(self, *parts: str) -> str:
        """A namespaced Redis key: ``{redis_prefix}:{part}:{part}…``."""
        return ":".join((self.redis_prefix, *parts))


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read once from the environment."""
    return Settings()
