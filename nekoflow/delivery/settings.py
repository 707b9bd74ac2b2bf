"""Delivery settings (``NEKOFLOW_DELIVERY_*``): retries, leases and per-channel rate limits."""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class RateOverride(BaseModel):
    """``count`` messages per ``period`` seconds (one rule of a channel's rate limits)."""

    model_config = ConfigDict(extra="forbid")

    #: Messages allowed per ``period``.
    count: int = Field(ge=1)
    #: Length of the window in seconds.
    period: float = Field(gt=0)


class DeliverySettings(BaseSettings):
    """How replies are delivered; read from ``NEKOFLOW_DELIVERY_*`` environment variables."""

    model_config = SettingsConfigDict(
        env_prefix="NEKOFLOW_DELIVERY_", env_file=None, extra="ignore"
    )

    #: Attempts of one chunk on temporary failures (429, 5xx, timeouts) before giving up.
    max_attempts: int = Field(default=8, ge=1)
    #: Exponential backoff with jitter between attempts when the platform gives no retry_after.
    backoff_base: float = Field(default=1.0, ge=0)
    #: The longest wait between attempts, in seconds.
    backoff_max: float = Field(default=60.0, ge=0)
    #: A send still in flight after this many seconds belongs to a dead worker.
    lease_seconds: float = Field(default=30.0, gt=0)
    #: Send again a chunk whose worker died mid-call, or whose call timed out or lost its
    #: connection after the request went out (at least once: may duplicate), instead of
    #: recording it as ``unknown`` (at most once). Platforms with idempotent sends ignore this.
    resend_unconfirmed: bool = False
    #: Per channel/platform overrides of the default limits, by rule name, e.g.
    #: ``{"telegram": {"chat": {"count": 1, "period": 1}, "bot": {"count": 30, "period": 1}}}``.
    rate_limits: dict[str, dict[str, RateOverride]] = Field(default_factory=dict)
    #: Turn off rate limiting altogether (tests of other parts; never in production).
    rate_limit_enabled: bool = True

    @field_validator("rate_limits")
    @classmethod
    def _known_rules(
        cls, value: dict[str, dict[str, RateOverride]]
    ) -> dict[str, dict[str, RateOverride]]:
        for channel, rules in value.items():
            for name in rules:
                if name not in {"chat", "group", "bot"}:
                    raise ValueError(
                        f"rate_limits.{channel}.{name}: unknown rule (use chat, group or bot)"
                    )
        return value


@lru_cache(maxsize=1)
def get_delivery_settings() -> DeliverySettings:
    """This process's delivery settings (from the environment, read once)."""
    return DeliverySettings()
