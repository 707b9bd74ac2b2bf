"""QQ official bot settings (``NEKOFLOW_QQBOT_*``): API base URLs, bots, webhook, gateway and
the passive-reply rules.

Several bots: ``NEKOFLOW_QQBOT_BOTS`` is a JSON list of ``{"name", "app_id", "secret", "mode",
"intents"}``; a single bot can be given with ``NEKOFLOW_QQBOT_APP_ID`` / ``_SECRET`` / ``_MODE``
/ ``_BOT_NAME``. Secrets are ``SecretStr``: never printed, logged or put in task arguments.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from nekoflow.platforms.checks import check_name, check_path, check_unique, check_url, pick

#: Gateway intents: GROUP_AND_C2C_EVENT (1<<25), DIRECT_MESSAGE (1<<12) and
#: PUBLIC_GUILD_MESSAGES (1<<30): @bot and C2C/group/guild-DM messages a public bot receives.
DEFAULT_INTENTS = (1 << 25) | (1 << 12) | (1 << 30)


class QQBot(BaseModel):
    """One QQ official bot: its name in nekoflow (URL path, ``bot=``), app id and secret."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    #: This bot's name in nekoflow: its callback URL ``{webhook_path}/{name}`` and ``--bot``;
    #: 1-64 letters, digits, ``_``, ``-`` or ``.``.
    name: str = "default"
    #: The bot's AppID (console → 开发设置).
    app_id: str = Field(min_length=1, max_length=64, pattern=r"^[0-9A-Za-z_-]+$")
    #: The bot's AppSecret (console → 开发设置): signs webhooks and fetches access tokens.
    secret: SecretStr
    #: ``webhook`` (QQ calls the API app) or ``gateway`` (``nekoflow gateway qqbot`` holds a
    #: WebSocket session).
    mode: Literal["webhook", "gateway"] = "webhook"
    #: Gateway mode: the intents bit mask subscribed to (default: group and C2C, guild DMs,
    #: public guild @messages).
    intents: int = Field(default=DEFAULT_INTENTS, ge=0)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value)

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value().strip():
            raise ValueError("must not be empty")
        return value


class QQBotSettings(BaseSettings):
    """QQ official bot integration settings, read from ``NEKOFLOW_QQBOT_*``."""

    model_config = SettingsConfigDict(
        env_prefix="NEKOFLOW_QQBOT_", env_file=None, extra="ignore", hide_input_in_errors=True
    )

    #: OpenAPI base URL (the sandbox is ``https://sandbox.api.sgroup.qq.com``).
    api_base_url: str = "https://api.sgroup.qq.com"
    #: Where access tokens come from (``POST {appId, clientSecret}``).
    token_url: str = "https://bots.qq.com/app/getAppAccessToken"
    #: Several bots: a JSON list of bot objects (keys below); the shorthands add one more.
    bots: list[QQBot] = Field(default_factory=list)
    # single-bot shorthands
    #: Single bot: its AppID (``secret`` is required too).
    app_id: str | None = None
    #: Single bot: its AppSecret.
    secret: SecretStr | None = None
    #: Single bot: ``webhook`` (QQ calls the API) or ``gateway`` (``nekoflow gateway qqbot``).
    mode: Literal["webhook", "gateway"] = "webhook"
    #: Single bot: its name in nekoflow (callback URL ``{webhook_path}/{bot_name}``).
    bot_name: str = "default"
    #: Where the API app listens for callbacks: ``{webhook_path}/{bot name}``.
    webhook_path: str = "/webhooks/qqbot"
    #: A signed callback whose ``X-Signature-Timestamp`` is further than this from now (seconds)
    #: is refused: a captured callback cannot be replayed later.
    max_clock_skew_seconds: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    #: Group, guild channel and guild DM passive replies are accepted this many seconds after
    #: the user's message (QQ: 5 min).
    reply_window_seconds: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    #: C2C (private chat) passive replies are accepted this many seconds after the user's
    #: message (QQ: 60 min).
    c2c_reply_window_seconds: float = Field(default=3600.0, gt=0, allow_inf_nan=False)
    #: Passive replies per user message (QQ: 5); chunks beyond fail delivery.
    max_replies: int = Field(default=5, ge=1)
    #: Refresh an access token this many seconds before it expires.
    token_margin_seconds: float = Field(default=60.0, ge=0)
    #: Seconds an OpenAPI call may take.
    timeout: float = Field(default=15.0, gt=0)
    #: Seconds to connect to the OpenAPI.
    connect_timeout: float = Field(default=5.0, gt=0)

    @field_validator("app_id", "secret", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("api_base_url", "token_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return check_url(value)

    @field_validator("webhook_path")
    @classmethod
    def _path(cls, value: str) -> str:
        return check_path(value)

    @model_validator(mode="after")
    def _shorthand(self) -> QQBotSettings:
        if (self.app_id is None) != (self.secret is None):
            raise ValueError("app_id and secret: set both or neither")
        if self.app_id is not None and self.secret is not None:
            if any(b.name == self.bot_name for b in self.bots):
                raise ValueError(f"bot_name: {self.bot_name!r} is also in bots")
            shorthand = QQBot(
                name=self.bot_name, app_id=self.app_id, secret=self.secret, mode=self.mode
            )
            self.bots = [shorthand, *self.bots]
        check_unique("bots", "name", [b.name for b in self.bots])
        return self

    def bot(self, name: str | None) -> QQBot | None:
        """The bot called ``name``; None or "" means the first bot."""
        return pick(self.bots, lambda b: b.name, name)


@lru_cache(maxsize=1)
def get_qqbot_settings() -> QQBotSettings:
    """This process's QQ bot settings (from the environment, read once)."""
    return QQBotSettings()
