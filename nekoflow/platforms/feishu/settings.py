"""Feishu settings (``NEKOFLOW_FEISHU_*``): Open API base URL, apps, event endpoint, security.

Several apps: ``NEKOFLOW_FEISHU_APPS`` is a JSON list of ``{"name", "app_id", "app_secret",
"verification_token", "encrypt_key", "bot_open_id", "mode"}``; a single app can be given with
``NEKOFLOW_FEISHU_APP_ID`` / ``_APP_SECRET`` / ``_VERIFICATION_TOKEN`` / ``_ENCRYPT_KEY`` /
``_BOT_OPEN_ID`` / ``_APP_NAME`` / ``_MODE``. ``mode`` is how events arrive: ``webhook`` (the
HTTP endpoint; the verification token is required) or ``long_connection`` (``nekoflow gateway
feishu`` holds a WebSocket to Feishu; no token needed). Secrets are ``SecretStr``: never
printed or logged.
"""

from __future__ import annotations

import secrets
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from nekoflow.platforms.checks import check_name, check_path, check_unique, check_url, pick

Mode = Literal["webhook", "long_connection"]


def _unguessable_token(data: object) -> object:
    """A long-connection app needs no verification token: give it one nobody knows, so the
    HTTP endpoint refuses every event sent to that app's URL."""
    if (
        isinstance(data, dict)
        and data.get("mode") == "long_connection"
        and not str(data.get("verification_token") or "").strip()
    ):
        return {**data, "verification_token": secrets.token_urlsafe(32)}
    return data


class FeishuApp(BaseModel):
    """One Feishu/Lark app (bot): its name in nekoflow (URL path, ``bot=``) and credentials."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    #: This app's name in nekoflow: its event URL ``{event_path}/{name}`` and ``--app``;
    #: 1-64 letters, digits, ``_``, ``-`` or ``.``.
    name: str = "default"
    #: The app's App ID (``cli_…``, console → 凭证与基础信息).
    app_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    #: The app's App Secret (console → 凭证与基础信息): fetches tenant access tokens.
    app_secret: SecretStr
    #: Console → 事件与回调 → Verification Token: every event must carry it.
    verification_token: SecretStr
    #: Console → Encrypt Key: when set, events are encrypted and signed (X-Lark-Signature).
    encrypt_key: SecretStr | None = None
    #: The bot's own open_id (mention detection); fetched from the bot info API when unset.
    bot_open_id: str | None = None
    #: How a reply is sent: ``text``, rich-text ``post`` (an ``md`` paragraph) or ``auto``
    #: (``post`` when the channel render policy supports Markdown).
    reply_format: Literal["auto", "text", "post"] = "auto"
    #: How events arrive: the HTTP endpoint, or the long connection (``nekoflow gateway feishu``).
    mode: Mode = "webhook"

    @model_validator(mode="before")
    @classmethod
    def _token_for_long_connection(cls, data: object) -> object:
        return _unguessable_token(data)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value)

    @field_validator("verification_token")
    @classmethod
    def _token_not_blank(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value().strip():  # a blank token would accept unsigned events
            raise ValueError("must not be blank (every event must carry the app's token)")
        return value


class FeishuSettings(BaseSettings):
    """Feishu integration settings, read from ``NEKOFLOW_FEISHU_*``."""

    model_config = SettingsConfigDict(
        env_prefix="NEKOFLOW_FEISHU_", env_file=None, extra="ignore", hide_input_in_errors=True
    )

    #: Open API base URL (Lark international: ``https://open.larksuite.com``).
    api_base_url: str = "https://open.feishu.cn"
    #: Several apps: a JSON list of app objects (keys below); the shorthands add one more.
    apps: list[FeishuApp] = Field(default_factory=list)
    # single-app shorthands
    #: Single app: its App ID (then ``app_secret`` is required too).
    app_id: str | None = None
    #: Single app: its App Secret.
    app_secret: SecretStr | None = None
    #: Single app: its Verification Token (required in ``webhook`` mode).
    verification_token: SecretStr | None = None
    #: Single app: its Encrypt Key (events encrypted and signed); unset = plain events.
    encrypt_key: SecretStr | None = None
    #: Single app: the bot's open_id; unset = fetched from the bot info API.
    bot_open_id: str | None = None
    #: Single app: ``text``, rich-text ``post`` or ``auto`` (``post`` when the channel renders
    #: Markdown).
    reply_format: Literal["auto", "text", "post"] = "auto"
    #: Single app: ``webhook`` (HTTP events) or ``long_connection`` (``nekoflow gateway feishu``).
    mode: Mode = "webhook"
    #: Single app: its name in nekoflow (event URL ``{event_path}/{app_name}``).
    app_name: str = "default"
    #: Where the API app listens for events: ``{event_path}/{app name}``.
    event_path: str = "/webhooks/feishu"
    #: Refuse signed events whose timestamp is further than this from now (replays).
    max_clock_skew_seconds: float = Field(default=300.0, gt=0)
    #: Refresh a tenant access token this many seconds before it expires.
    token_margin_seconds: float = Field(default=300.0, ge=0)
    #: Seconds an Open API call may take.
    timeout: float = Field(default=15.0, gt=0)
    #: Seconds to connect to the Open API.
    connect_timeout: float = Field(default=5.0, gt=0)

    @field_validator(
        "app_id", "app_secret", "verification_token", "encrypt_key", "bot_open_id", mode="before"
    )
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("api_base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return check_url(value)

    @field_validator("event_path")
    @classmethod
    def _path(cls, value: str) -> str:
        return check_path(value)

    @model_validator(mode="after")
    def _shorthand(self) -> FeishuSettings:
        if self.app_id is not None:
            if self.app_secret is None:
                raise ValueError("app_id: app_secret is required too")
            if self.verification_token is None and self.mode == "webhook":
                raise ValueError("app_id: verification_token is required too (webhook mode)")
            if any(a.name == self.app_name for a in self.apps):
                raise ValueError(f"app_name: {self.app_name!r} is also in apps")
            shorthand = FeishuApp(
                name=self.app_name,
                app_id=self.app_id,
                app_secret=self.app_secret,
                verification_token=self.verification_token or SecretStr(secrets.token_urlsafe(32)),
                encrypt_key=self.encrypt_key,
                bot_open_id=self.bot_open_id,
                reply_format=self.reply_format,
                mode=self.mode,
            )
            self.apps = [shorthand, *self.apps]
        check_unique("apps", "name", [a.name for a in self.apps])
        return self

    def app(self, name: str | None) -> FeishuApp | None:
        """The app called ``name``; None or "" means the first app."""
        return pick(self.apps, lambda a: a.name, name)


@lru_cache(maxsize=1)
def get_feishu_settings() -> FeishuSettings:
    """This process's Feishu settings (from the environment, read once)."""
    return FeishuSettings()
