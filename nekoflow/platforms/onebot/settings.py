"""OneBot v11 settings (``NEKOFLOW_ONEBOT_*``): reverse WebSocket, HTTP API and POST receiver.

Several bots: ``NEKOFLOW_ONEBOT_BOTS`` is a JSON list of ``{"self_id", "mode", "access_token",
"http_api_url", "http_api_token", "secret"}``; a single bot can be given with the shorthand
``NEKOFLOW_ONEBOT_SELF_ID`` (its other values then come from the top-level settings). A bot's
missing token, API URL or secret falls back to the top-level one. ``mode`` is ``ws`` (the bot
connects to ``nekoflow gateway onebot``; replies go back on its socket) or ``http`` (events are
POSTed to the API's event path; replies go through the implementation's HTTP API). An ``http``
bot needs a ``secret`` unless ``allow_unsigned`` is set; ``ws`` bots are never accepted on the
event path (their QQ number is no credential). Tokens and
secrets are ``SecretStr``: never printed, logged or put in task arguments.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from nekoflow.platforms.checks import check_path, check_unique, check_url, pick

_SELF_ID = re.compile(r"^[0-9]{1,20}$")


class OneBotBot(BaseModel):
    """One QQ account behind a OneBot implementation, keyed by its QQ number (``self_id``)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    #: The bot's QQ number (digits); events and replies are routed by it.
    self_id: str
    #: ``ws``: the bot connects to ``nekoflow gateway onebot``; ``http``: events are POSTed to the
    #: API and replies go through ``http_api_url``.
    mode: Literal["ws", "http"] = "ws"
    #: Reverse WS / HTTP API bearer token (falls back to ``NEKOFLOW_ONEBOT_ACCESS_TOKEN``).
    access_token: SecretStr | None = None
    #: ``http`` mode: the implementation's HTTP API (``POST {url}/send_msg``).
    http_api_url: str | None = None
    #: ``http`` mode: bearer token of that HTTP API (falls back to ``access_token``).
    http_api_token: SecretStr | None = None
    #: ``http`` mode: HMAC-SHA1 secret of ``X-Signature`` on POSTed events.
    secret: SecretStr | None = None
    #: ``http`` mode without a secret: accept unsigned POSTed events (anyone who can reach the
    #: event path can then post as this bot). Refused at start-up unless set explicitly.
    allow_unsigned: bool = False

    @field_validator("self_id", mode="before")
    @classmethod
    def _self_id(cls, value: object) -> object:
        value = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        if not isinstance(value, str) or not _SELF_ID.match(value):
            raise ValueError("must be the bot's QQ number (digits)")
        return value

    @field_validator("http_api_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return check_url(value)


class OneBotSettings(BaseSettings):
    """OneBot integration settings, read from ``NEKOFLOW_ONEBOT_*``."""

    model_config = SettingsConfigDict(
        env_prefix="NEKOFLOW_ONEBOT_", env_file=None, extra="ignore", hide_input_in_errors=True
    )

    #: Several bots: a JSON list of bot objects (keys below); ``self_id`` adds one more.
    bots: list[OneBotBot] = Field(default_factory=list)
    # single-bot shorthand
    #: Single bot: its QQ number (its tokens, URL and secret come from the settings below).
    self_id: str | None = None
    #: Single bot: ``ws`` (reverse WebSocket, NapCat's usual set-up) or ``http`` (POSTed events).
    mode: Literal["ws", "http"] = "ws"
    #: Reverse WebSocket server of ``nekoflow gateway onebot`` (NapCat connects to it).
    ws_host: str = "127.0.0.1"
    ws_port: int = Field(default=6700, ge=0, le=65535)
    ws_path: str = "/onebot/v11/ws"
    #: Token every connecting bot must present (``Authorization: Bearer`` or ``?access_token=``).
    access_token: SecretStr | None = None
    #: The implementation's HTTP API (``http`` mode).
    http_api_url: str | None = None
    #: Bearer token of that HTTP API (falls back to ``access_token``).
    http_api_token: SecretStr | None = None
    #: Where the API app receives POSTed events: ``{event_path}`` (self id from ``X-Self-ID``).
    event_path: str = "/webhooks/onebot"
    #: HMAC-SHA1 secret of ``X-Signature`` on POSTed events (required for ``http`` bots).
    secret: SecretStr | None = None
    #: Shorthand bot: ``http`` mode without a secret is accepted only with this set (see above).
    allow_unsigned: bool = False
    #: Seconds an HTTP API call (``http`` mode) may take.
    timeout: float = Field(default=10.0, gt=0)
    #: Seconds to connect to the HTTP API (``http`` mode).
    connect_timeout: float = Field(default=5.0, gt=0)
    #: Seconds the gateway waits for an action's echo before dropping the connection.
    echo_timeout: float = Field(default=30.0, gt=0)

    @field_validator(
        "self_id", "access_token", "http_api_url", "http_api_token", "secret", mode="before"
    )
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("http_api_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return check_url(value)

    @field_validator("ws_path", "event_path")
    @classmethod
    def _path(cls, value: str) -> str:
        return check_path(value)

    @model_validator(mode="after")
    def _shorthand(self) -> OneBotSettings:
        if self.self_id is not None:
            if any(b.self_id == self.self_id for b in self.bots):
                raise ValueError(f"self_id: {self.self_id!r} is also in bots")
            shorthand = OneBotBot(
                self_id=self.self_id, mode=self.mode, allow_unsigned=self.allow_unsigned
            )
            self.bots = [shorthand, *self.bots]
        resolved = []
        for b in self.bots:
            resolved.append(
                b.model_copy(
                    update={
                        "access_token": b.access_token or self.access_token,
                        "http_api_url": b.http_api_url or self.http_api_url,
                        "http_api_token": b.http_api_token
                        or self.http_api_token
                        or b.access_token
                        or self.access_token,
                        "secret": b.secret or self.secret,
                    }
                )
            )
            if b.mode == "http" and not resolved[-1].http_api_url:
                raise ValueError(f"bots: bot {b.self_id} in http mode needs http_api_url")
            if b.mode == "http" and resolved[-1].secret is None and not b.allow_unsigned:
                raise ValueError(
                    f"bots: bot {b.self_id} in http mode needs a secret (X-Signature), or "
                    '"allow_unsigned": true to accept unsigned events from anyone'
                )
        self.bots = resolved
        check_unique("bots", "self_id", [b.self_id for b in self.bots])
        return self

    def bot(self, self_id: str | None) -> OneBotBot | None:
        """The bot with QQ number ``self_id``; None or "" means the first bot."""
        return pick(self.bots, lambda b: b.self_id, self_id)


@lru_cache(maxsize=1)
def get_onebot_settings() -> OneBotSettings:
    """This process's OneBot settings (from the environment, read once)."""
    return OneBotSettings()
