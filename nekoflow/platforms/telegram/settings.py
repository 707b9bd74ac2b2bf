"""Telegram settings (``NEKOFLOW_TELEGRAM_*``): the Bot API server, bots, webhook and polling.

Several bots: ``NEKOFLOW_TELEGRAM_BOTS`` is a JSON list of ``{"name", "token", "secret_token",
"mode", "bot_username"}``; a single bot can be given with the shorthands
``NEKOFLOW_TELEGRAM_TOKEN`` / ``_SECRET_TOKEN`` / ``_MODE`` / ``_BOT_NAME`` / ``_BOT_USERNAME``.
Tokens and secrets are ``SecretStr``: never printed, logged or put in task arguments.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from nekoflow.platforms.checks import check_name, check_path, check_unique, check_url, pick

_SECRET = re.compile(r"^[A-Za-z0-9_-]{1,256}$")  # what setWebhook accepts as secret_token


class TelegramBot(BaseModel):
    """One Telegram bot: its name in nekoflow (URL path, ``enqueue_turn(bot=…)``) and secrets."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    #: This bot's name in nekoflow: its webhook URL ``{webhook_path}/{name}`` and ``--bot``;
    #: 1-64 letters, digits, ``_``, ``-`` or ``.``.
    name: str = "default"
    #: The Bot API token from @BotFather (``<bot id>:<secret>``).
    token: SecretStr
    #: Webhook mode: Telegram sends it back in ``X-Telegram-Bot-Api-Secret-Token``.
    secret_token: SecretStr | None = None
    #: ``polling`` (``nekoflow gateway telegram`` calls getUpdates) or ``webhook`` (Telegram
    #: calls the API; ``secret_token`` required).
    mode: Literal["webhook", "polling"] = "polling"
    #: The bot's @username (without @), so group @mentions are recognised.
    bot_username: str | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value)

    @field_validator("token")
    @classmethod
    def _token(cls, value: SecretStr) -> SecretStr:
        if not re.match(r"^\d+:[A-Za-z0-9_-]+$", value.get_secret_value()):
            raise ValueError("is not a Bot API token ('<bot id>:<secret>')")
        return value

    @field_validator("secret_token")
    @classmethod
    def _secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not _SECRET.match(value.get_secret_value()):
            raise ValueError("must be 1-256 characters A-Z, a-z, 0-9, '_' or '-'")
        return value

    @model_validator(mode="after")
    def _webhook_needs_secret(self) -> TelegramBot:
        if self.mode == "webhook" and self.secret_token is None:
            raise ValueError("secret_token is required in webhook mode")
        return self


class TelegramSettings(BaseSettings):
    """Telegram integration settings, read from ``NEKOFLOW_TELEGRAM_*``."""

    model_config = SettingsConfigDict(
        env_prefix="NEKOFLOW_TELEGRAM_", env_file=None, extra="ignore", hide_input_in_errors=True
    )

    #: The Bot API server (operators may run their own ``telegram-bot-api``).
    api_base_url: str = "https://api.telegram.org"
    #: Several bots: a JSON list of bot objects (keys below); ``token`` adds one more.
    bots: list[TelegramBot] = Field(default_factory=list)
    # single-bot shorthands
    #: Single bot: its Bot API token from @BotFather.
    token: SecretStr | None = None
    #: Single bot: webhook secret (1-256 of ``A-Z a-z 0-9 _ -``), required in ``webhook`` mode.
    secret_token: SecretStr | None = None
    #: Single bot: ``polling`` or ``webhook``.
    mode: Literal["webhook", "polling"] = "polling"
    #: Single bot: its name in nekoflow (webhook URL ``{webhook_path}/{bot_name}``).
    bot_name: str = "default"
    #: Single bot: its @username without @, so group @mentions are recognised.
    bot_username: str | None = None
    #: Where the API app listens for updates: ``{webhook_path}/{bot name}``.
    webhook_path: str = "/webhooks/telegram"
    #: The public HTTPS base URL Telegram calls (``nekoflow gateway telegram --set-webhook``).
    public_url: str | None = None
    #: Seconds a Bot API call may take (``getUpdates`` adds ``poll_timeout``).
    timeout: float = Field(default=15.0, gt=0)
    #: Seconds to connect to the Bot API server.
    connect_timeout: float = Field(default=5.0, gt=0)
    #: Long-polling wait of ``getUpdates`` in seconds.
    poll_timeout: int = Field(default=25, ge=0, le=50)
    #: Update types asked for (``getUpdates`` / ``setWebhook``), a JSON list.
    allowed_updates: list[str] = Field(
        default_factory=lambda: ["message", "edited_message", "channel_post"]
    )

    @field_validator("token", "secret_token", "bot_username", "public_url", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("api_base_url", "public_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return check_url(value)

    @field_validator("webhook_path")
    @classmethod
    def _path(cls, value: str) -> str:
        return check_path(value)

    @model_validator(mode="after")
    def _shorthand(self) -> TelegramSettings:
        if self.token is not None:
            if any(b.name == self.bot_name for b in self.bots):
                raise ValueError(f"bot_name: {self.bot_name!r} is also in bots")
            self.bots = [
                TelegramBot(
                    name=self.bot_name,
                    token=self.token,
                    secret_token=self.secret_token,
                    mode=self.mode,
                    bot_username=self.bot_username,
                ),
                *self.bots,
            ]
        check_unique("bots", "name", [b.name for b in self.bots])
        return self

    def bot(self, name: str | None) -> TelegramBot | None:
        """The bot called ``name``; None or "" means the first bot."""
        return pick(self.bots, lambda b: b.name, name)


@lru_cache(maxsize=1)
def get_telegram_settings() -> TelegramSettings:
    """This process's Telegram settings (from the environment, read once)."""
    return TelegramSettings()
