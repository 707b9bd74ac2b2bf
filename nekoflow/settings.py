"""All runtime settings in one place, read from ``NEKOFLOW_*`` environment variables.

Each field says what it is for in a ``#:`` comment above it: ``docs/gen_reference.py`` turns
those into the settings reference (docs/reference/settings.md), and CI fails when one is missing.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from nekoflow.prices import Price


def _check_port(url: str) -> None:
    """Refuse a URL whose port is not a number from 0 to 65535 (else a traceback at connect)."""
    try:
        _ = urlsplit(url.strip()).port
    except ValueError:
        raise ValueError("the port must be a number from 0 to 65535") from None


def _default_database_url() -> str:
    """``nekoflow.db`` in the current directory (``sqlite:///<cwd>/nekoflow.db``)."""
    return f"sqlite:///{Path.cwd() / 'nekoflow.db'}"


class Settings(BaseSettings):
    """Process-wide configuration; tests build one, everything else calls :func:`get_settings`."""

    model_config = SettingsConfigDict(
        env_prefix="NEKOFLOW_", env_file=None, extra="ignore", hide_input_in_errors=True
    )

    # storage
    #: The system of record: ``sqlite:///path/to/nekoflow.db`` or ``postgresql://user@host:5432/db``
    #: (psycopg 3). Every process of a deployment must use the same one.
    database_url: str = Field(default_factory=_default_database_url)
    #: Log every SQL statement (debugging only: statements may quote users).
    database_echo: bool = False
    #: PostgreSQL: commit the results of the intermediate stages (dispatch … review) without
    #: waiting for the WAL flush. A server crash may then lose the last fraction of a second of
    #: such results; the sweeper re-runs those stages (all idempotent). Enqueue and
    #: apply_deltas always commit synchronously.
    database_async_stage_commits: bool = True
    #: PostgreSQL connections each process keeps open, and how many more it may open at a peak
    #: (an ``llm`` worker with ``-P threads -c 64`` shares one pool among its threads).
    database_pool_size: int = Field(default=5, ge=1)
    #: Extra PostgreSQL connections a process may open above ``database_pool_size`` at a peak.
    database_max_overflow: int = Field(default=10, ge=0)

    # redis / celery
    #: Redis for cooldowns, AutoState, the event bus, streaming and leases; also the Celery
    #: broker and result backend unless those are set (``redis://``, ``rediss://``, ``unix://``).
    redis_url: str = "redis://127.0.0.1:6379/0"
    #: Prefix of every Redis key and pub/sub channel (several deployments can share one Redis).
    redis_prefix: str = "nekoflow"
    #: Celery broker (``redis://…``, ``amqp://…`` for RabbitMQ). Unset: ``redis_url``. The
    #: embedded ``nekoflow demo`` / ``turn`` run in process unless it is set.
    broker_url: str | None = None
    #: Celery result backend URL. Unset: ``redis_url``.
    result_backend: str | None = None
    #: Seconds before a Redis broker redelivers a message that was taken but never
    #: acknowledged (a killed worker's).
    broker_visibility_timeout: int = Field(default=3600, gt=0)

    # LLM
    #: "scripted" (offline canned replies) or "openai" (any OpenAI-compatible server). Unset:
    #: inferred by :attr:`effective_llm_provider` (openai when a base URL or an API key is set).
    llm_provider: Literal["scripted", "openai"] | None = None
    #: The OpenAI-compatible server, ``http(s)://…/v1`` (DeepSeek, Ollama, vLLM, llama.cpp …).
    #: Unset: the official OpenAI endpoint when an API key is set.
    llm_base_url: str | None = None
    #: Model name sent to the server (``model`` of the chat completion request).
    llm_model: str = "gpt-4o-mini"
    #: Bearer key of the model server (never logged; ``OPENAI_API_KEY`` is not read).
    llm_api_key: SecretStr | None = None
    #: Seconds a whole model call may take before it fails as a timeout (then retried).
    llm_timeout: float = Field(default=60.0, gt=0)
    #: Seconds to open the connection to the model server.
    llm_connect_timeout: float = Field(default=5.0, gt=0)
    #: Sampling temperature of replies, 0–2. Set it empty (``NEKOFLOW_LLM_TEMPERATURE=``) to send
    #: none: reasoning models refuse one.
    llm_temperature: float | None = Field(default=0.8, ge=0, le=2)
    #: Cap on completion tokens per reply. Unset: the server's own limit.
    llm_max_tokens: int | None = Field(default=None, gt=0)
    #: Attempts of a model call on retryable failures (429, 5xx, timeouts, lost connections);
    #: the SDK's own retries are off.
    llm_max_attempts: int = Field(default=4, ge=1)
    #: Exponential backoff with jitter between model call attempts, in seconds: the first
    #: wait (``llm_backoff_base``) and the longest (``llm_backoff_max``).
    llm_backoff_base: float = Field(default=1.0, ge=0)
    llm_backoff_max: float = Field(default=30.0, ge=0)
    #: How long a claim on a turn's LLM call lasts without renewal (renewed every third of it
    #: while the call runs). A crashed worker's call can be retried after this long.
    #: Unset: 30 s, or half of ``turn_lease_seconds`` when that is shorter.
    llm_lease_seconds: float = Field(default=0.0, ge=0)
    #: Stream the reply (llm_call) from the model and publish its pieces on Redis pub/sub
    #: (``{redis_prefix}:turn-tokens:{turn_id}``) for the Web SSE ``token`` events and channel
    #: adapters; only when Redis is configured. Off: one non-streamed call.
    llm_stream: bool = True
    #: Pieces arriving within this many ms of the last publish go out together (the first piece
    #: never waits); 0 publishes every piece.
    llm_stream_flush_ms: float = Field(default=50.0, ge=0)

    #: Price per million prompt / completion tokens per model, for ``nekoflow usage``
    #: (JSON: ``{"gpt-4o-mini": {"prompt": 0.15, "completion": 0.6}}``).
    llm_prices: dict[str, Price] = Field(default_factory=dict)

    # review
    #: How a reply is reviewed: "rule" (keyword rules, no model call) or "llm" (the model
    #: scores it; falls back to the rules on any failure).
    review_mode: Literal["rule", "llm"] = "rule"
    # "auto": Redis whenever Redis is configured (NEKOFLOW_REDIS_URL set, or a Redis broker),
    # so every worker process shares them; in-process only for the embedded demo and tests.
    event_bus: Literal["auto", "memory", "redis"] = "auto"
    #: Where LLM review quality scores (AutoState) are cached: "redis", "memory" (one
    #: process) or "auto" (Redis whenever Redis is configured).
    autostate_backend: Literal["auto", "memory", "redis"] = "auto"
    #: Seconds a cached AutoState quality score lives (default one week).
    autostate_ttl_seconds: int = Field(default=7 * 24 * 3600, gt=0)
    # bulk re-review: LLM-mode calls per second across all workers (shared through Redis)
    rereview_llm_rate_per_second: float = Field(default=2.0, gt=0)

    # channels
    #: Path of the channels' ``config.ini`` (``[character_runtime]`` sections, conversation
    #: flow); re-read when it changes. A missing file means the built-in defaults.
    runtime_config_path: str = "config.ini"
    #: Per channel options of its adapter (JSON), e.g. ``{"qq": {"bot_uin": 10001}}``.
    adapter_options: dict[str, dict[str, Any]] = Field(default_factory=dict)

    # turn pipeline
    #: Where world-book cooldowns and timed effects live: "redis", "memory" (one process)
    #: or "auto" (Redis whenever Redis is configured).
    cooldown_backend: Literal["auto", "memory", "redis"] = "auto"
    #: A turn (or its delivery) untouched this long is re-published by the sweeper: its worker
    #: died. Everything that works on a turn beats every third of it (the model call included,
    #: however long), so it bounds how long a SIGKILLed worker's turn waits, not the call.
    turn_lease_seconds: float = Field(default=20.0, gt=0)
    #: Attempts of a turn stage that hit an unexpected error (a database hiccup) before
    #: the turn fails with the failure reply.
    stage_max_attempts: int = Field(default=5, ge=1)
    #: Seconds between runs of the sweeper (Celery beat's ``nekoflow.sweep``), which
    #: re-publishes stalled turns; also how stale beat's heartbeat may be for ``doctor``.
    sweep_interval_seconds: float = Field(default=5.0, gt=0)
    #: How often beat runs the proactive sweep, which starts the due follow-ups and reminders
    #: (``[proactive*]`` in config.ini); a due message goes out at most this much late.
    proactive_sweep_seconds: float = Field(default=30.0, gt=0)
    #: Dialogue lines of history (newest first) loaded for a turn's prompt and lore scan.
    history_limit: int = Field(default=200, ge=1)
    #: Recent assistant messages the world book's ``assistant_recent`` source scans (and
    #: the LLM review and re-review read).
    recent_message_limit: int = Field(default=6, ge=0)
    #: Unused since long-term memory (its budgets are tokens: ``NEKOFLOW_MEMORY_*``); kept
    #: so existing environments still parse.
    memory_prompt_chars: int = Field(default=1200, ge=0)
    #: Days a short-term memory (from review) lives before it expires.
    memory_short_ttl_days: float = Field(default=7.0, gt=0)
    #: Days a long-term memory (from review) lives before it expires.
    memory_long_ttl_days: float = Field(default=180.0, gt=0)
    #: What the character answers when a turn fails for good (text, sent through the channel).
    failure_reply: str = "抱歉,我刚刚走神了,能再说一遍吗?"

    # world-book (lore) budgets of a turn
    #: The model's context window in tokens; lore gets ``lore_budget_share`` of it.
    llm_context_window: int = Field(default=8192, gt=0)
    #: Share (0–1] of ``llm_context_window`` world-book lore may fill (SillyTavern: 25%).
    lore_budget_share: float = Field(default=0.25, gt=0, le=1)
    #: The most entries a turn injects from the seed's own world books (the SPEC's cap of 8);
    #: imported SillyTavern books follow the token budget alone, as SillyTavern does.
    lore_max_entries: int = Field(default=8, ge=0)
    #: An entry longer than its whole budget: "cut" it to the budget when first in line, or "skip".
    lore_oversize: Literal["cut", "skip"] = "cut"

    # HTTP API
    # Bearer token required for write endpoints; when unset (or blank), writes are refused
    # with 503 "NEKOFLOW_API_TOKEN not configured".
    api_token: SecretStr | None = None
    # Reads of turns, replies and scope ids (/api/turns/{id}, its events, /runs) need the token
    # too; true opens them to anyone who can reach the API (a private network, a demo).
    api_public_reads: bool = False
    # With public reads, anonymous world-book test-match calls per client and minute (each one
    # runs the recall over every book); with the token there is no limit.
    api_test_match_per_minute: int = Field(default=30, ge=1)
    # Origins allowed by CORS (JSON list in the environment); empty = CORS off.
    api_cors_origins: list[str] = Field(default_factory=list)
    # Request body limits in bytes, per route family (413 before reading past them): platform
    # webhooks (real events are a few KB), world-book routes (books with many entries), the rest.
    api_webhook_max_body_bytes: int = Field(default=256 * 1024, gt=0)
    api_world_book_max_body_bytes: int = Field(default=32 * 1024 * 1024, gt=0)
    api_max_body_bytes: int = Field(default=1024 * 1024, gt=0)

    # monitoring
    #: Scope ids carry platform user/group ids (``qq:private:30009``). "hashed" (the default)
    #: shows a keyed hash (HMAC-SHA256 with ``monitoring_hash_key``) in task args, hence in
    #: Flower, instead; "plain" shows the ids (only where no one else can reach Flower).
    monitoring_scope_ids: Literal["plain", "hashed"] = "hashed"
    #: The hash's secret key. Unset: derived from the database URL (the same in every process
    #: of a deployment, as secret as its password); set a long random one wherever Flower is
    #: reachable (docker-compose.yml requires it).
    monitoring_hash_key: SecretStr | None = None
    #: Opt-in debug log file (0600) for error details that may quote users (server error
    #: bodies, tracebacks). Off when unset.
    debug_log: str | None = None
    #: OpenTelemetry traces (one trace per turn, a span per stage, the LLM call as a child):
    #: "off" (default), "otlp" (the exporter reads the standard ``OTEL_EXPORTER_OTLP_*``
    #: variables; needs ``pip install 'nekoflow[otel]'``) or "console" (spans on stdout).
    tracing: Literal["off", "otlp", "console"] = "off"

    @field_validator("llm_provider", mode="before")
    @classmethod
    def _blank_provider_is_unset(cls, value: Any) -> Any:
        # NEKOFLOW_LLM_PROVIDER= (compose's ${VAR:-}) means "not chosen": infer it.
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("llm_temperature", "llm_max_tokens", mode="before")
    @classmethod
    def _blank_is_not_sent(cls, value: Any) -> Any:
        # NEKOFLOW_LLM_TEMPERATURE= means "send none" (reasoning models refuse a temperature).
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: str) -> str:
        if not re.match(r"^(sqlite|postgres|postgresql)(\+\w+)?://", value.strip()):
            raise ValueError(
                "unsupported database URL: use sqlite:///path/to/nekoflow.db or "
                "postgresql://user@host:5432/db"
            )
        _check_port(value)
        return value.strip()

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, value: str) -> str:
        if not re.match(r"^(redis|rediss|unix)://", value.strip()):
            raise ValueError("not a Redis URL: use redis://host:6379/0 (or rediss://, unix://)")
        _check_port(value)
        return value.strip()

    @field_validator("llm_base_url", mode="before")
    @classmethod
    def _check_llm_base_url(cls, value: object) -> object:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if not isinstance(value, str) or not re.match(r"^https?://[^\s/?#]+[^\s]*$", value.strip()):
            raise ValueError("not an http(s):// URL: use e.g. https://api.openai.com/v1")
        return value.strip()

    @field_validator("broker_url", "result_backend")
    @classmethod
    def _check_celery_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not re.match(r"^[a-z][a-z0-9+]*://", value.strip()):
            raise ValueError("not a URL: use redis://host:6379/0 (or memory:// for one process)")
        _check_port(value)
        return value.strip()

    @model_validator(mode="after")
    def _fill_celery_urls(self) -> Settings:
        if self.broker_url is None:
            self.broker_url = self.redis_url
        if self.result_backend is None:
            self.result_backend = self.redis_url
        return self

    @model_validator(mode="after")
    def _check_leases(self) -> Settings:
        # The model call renews its lease and the turn while it runs (heartbeat), so the turn
        # lease need not outlast llm_timeout: it only bounds how long a dead worker's turn waits.
        if not self.llm_lease_seconds:
            self.llm_lease_seconds = min(30.0, self.turn_lease_seconds / 2)
        if self.llm_lease_seconds > self.turn_lease_seconds:
            raise ValueError(
                f"llm_lease_seconds ({self.llm_lease_seconds:g} s) must not exceed "
                f"turn_lease_seconds ({self.turn_lease_seconds:g} s)"
            )
        return self

    @field_validator("monitoring_hash_key", mode="before")
    @classmethod
    def _blank_key_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def scope_hash_key(self) -> bytes | None:
        """The key for scope ids shown by monitoring, or None to show them plainly."""
        if self.monitoring_scope_ids != "hashed":
            return None
        if self.monitoring_hash_key is not None:
            return self.monitoring_hash_key.get_secret_value().encode("utf-8")
        return hashlib.sha256(b"nekoflow-monitoring\0" + self.database_url.encode()).digest()

    @property
    def redis_configured(self) -> bool:
        """Whether a Redis server is part of this deployment: NEKOFLOW_REDIS_URL was set, or
        the broker or result backend is Redis."""
        urls = (self.broker_url or "", self.result_backend or "")
        return "redis_url" in self.model_fields_set or any(
            u.startswith(("redis://", "rediss://")) for u in urls
        )

    @property
    def effective_llm_provider(self) -> Literal["scripted", "openai"]:
        """The model provider in use: NEKOFLOW_LLM_PROVIDER when set, else inferred."""
        return infer_llm_provider(self)[0]

    def _backend(self, choice: str) -> str:
        if choice == "auto":
            return "redis" if self.redis_configured else "memory"
        return choice

    def engine_options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`nekoflow.storage.make_engine`: echo, and the server pool."""
        options: dict[str, Any] = {"echo": self.database_echo}
        if not self.database_url.startswith("sqlite"):
            options["pool_size"] = self.database_pool_size
            options["max_overflow"] = self.database_max_overflow
        return options

    @property
    def uses_redis_cooldowns(self) -> bool:
        """Whether world-book cooldowns live in Redis ("auto": whenever Redis is configured)."""
        return self._backend(self.cooldown_backend) == "redis"

    @property
    def effective_event_bus(self) -> str:
        """The event bus in use: "redis" or "memory" ("auto" resolved)."""
        return self._backend(self.event_bus)

    @property
    def effective_autostate_backend(self) -> str:
        """Where AutoState lives: "redis" or "memory" ("auto" resolved)."""
        return self._backend(self.autostate_backend)

    def in_process_shared_state(self) -> list[str]:
        """The settings whose state stays inside one process (empty when all are shared)."""
        out = []
        if not self.uses_redis_cooldowns:
            out.append("cooldown_backend")
        if self.effective_event_bus != "redis":
            out.append("event_bus")
        if self.effective_autostate_backend != "redis":
            out.append("autostate_backend")
        return out

    def redis_key(self, *parts: str) -> str:
        """A namespaced Redis key: ``{redis_prefix}:{part}:{part}…``."""
        return ":".join((self.redis_prefix, *parts))


def infer_llm_provider(settings: Settings) -> tuple[Literal["scripted", "openai"], str]:
    """The model provider and why: the explicit NEKOFLOW_LLM_PROVIDER; else "openai" when
    NEKOFLOW_LLM_BASE_URL (a compatible server) or NEKOFLOW_LLM_API_KEY (the official endpoint)
    is set; else the offline "scripted" model."""
    if settings.llm_provider is not None:
        return settings.llm_provider, "NEKOFLOW_LLM_PROVIDER"
    if settings.llm_base_url is not None and settings.llm_base_url.strip():
        return "openai", "inferred from NEKOFLOW_LLM_BASE_URL"
    key = settings.llm_api_key
    if key is not None and key.get_secret_value().strip():
        return "openai", "inferred from NEKOFLOW_LLM_API_KEY"
    return "scripted", "no NEKOFLOW_LLM_BASE_URL or NEKOFLOW_LLM_API_KEY set"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read once from the environment."""
    return Settings()
