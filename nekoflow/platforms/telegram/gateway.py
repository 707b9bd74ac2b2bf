"""``nekoflow gateway telegram``: long polling (``getUpdates``) for bots without a public URL.

The offset is stored in SQL (``platform_cursor``) after each update is stored as a turn, so a
restart neither skips an update (the offset only moves past stored ones) nor repeats one (an
update fetched again after a crash between storing and saving the offset carries the same
message id, which ``enqueue`` recognises: no second turn). Replies go out through the deliver
task like any other turn.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from nekoflow.delivery.base import RetryLater
from nekoflow.delivery.tables import PlatformCursor
from nekoflow.errors import ConfigError, InputError
from nekoflow.platforms.runtime import reason
from nekoflow.platforms.telegram.client import BotApiClient, TelegramError
from nekoflow.platforms.telegram.settings import TelegramBot, TelegramSettings
from nekoflow.storage.dialogue import utcnow

log = logging.getLogger(__name__)

PLATFORM = "telegram"

Submit = Callable[[dict[str, Any], str], Any]
"""(update, bot name) → stores the update as a turn (``enqueue_turn``)."""


def load_offset(engine: Engine, bot: str) -> int:
    """The next ``getUpdates`` offset of ``bot`` (0: none stored yet)."""
    with Session(engine) as s:
        row = s.get(PlatformCursor, (PLATFORM, bot))
        return row.position if row is not None else 0


def save_offset(engine: Engine, bot: str, offset: int) -> None:
    """Store ``bot``'s next offset (never moves backwards)."""
    with Session(engine) as s:
        row = s.get(PlatformCursor, (PLATFORM, bot))
        if row is None:
            s.add(PlatformCursor(platform=PLATFORM, bot=bot, position=offset))
        elif offset > row.position:
            row.position = offset
            row.updated_at = utcnow()
            s.add(row)
        s.commit()


class PollingGateway:
    """Fetches one bot's updates and submits each as a turn, persisting the offset."""

    def __init__(
        self,
        engine: Engine,
        settings: TelegramSettings,
        bot: TelegramBot,
        submit: Submit,
        *,
        client: BotApiClient | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.bot = bot
        self.submit = submit
        self.client = client or BotApiClient(
            bot.token.get_secret_value(),
            base_url=settings.api_base_url,
            timeout=settings.timeout,
            connect_timeout=settings.connect_timeout,
        )
        self.handled = 0
        #: why :meth:`run` gave up (None: it did not)
        self.error: str | None = None

    @property
    def token_setting(self) -> str:
        """The variable holding this bot's token."""
        if self.settings.token is not None and self.bot.name == self.settings.bot_name:
            return "NEKOFLOW_TELEGRAM_TOKEN"
        return f"the token of bot {self.bot.name!r} in NEKOFLOW_TELEGRAM_BOTS"

    def prepare(self) -> None:
        """Remove a webhook (``getUpdates`` is refused while one is set); pending updates stay."""
        self.client.call("deleteWebhook", {"drop_pending_updates": False})

    def poll_once(self, *, timeout: int | None = None) -> int:
        """One ``getUpdates`` round; returns how many updates were stored as turns (or skipped).

        A malformed update is logged (the field only) and passed over — it would fail the same
        way forever; any other error leaves the offset where it was, so the update is fetched
        again.
        """
        offset = load_offset(self.engine, self.bot.name)
        wait = self.settings.poll_timeout if timeout is None else timeout
        params: dict[str, Any] = {"timeout": wait, "allowed_updates": self.settings.allowed_updates}
        if offset:
            params["offset"] = offset
        updates = self.client.call("getUpdates", params, timeout=wait + self.settings.timeout)
        if not isinstance(updates, list):
            raise RetryLater("telegram getUpdates: result is not a list")
        done = 0
        for update in sorted(
            (u for u in updates if isinstance(u, dict) and isinstance(u.get("update_id"), int)),
            key=lambda u: u["update_id"],
        ):
            update_id = int(update["update_id"])
            if update_id < offset:
                continue
            try:
                self.submit(update, self.bot.name)
            except InputError as exc:
                log.warning("telegram update %d ignored: bad field %s", update_id, exc.field)
            save_offset(self.engine, self.bot.name, update_id + 1)
            done += 1
        self.handled += done
        return done

    def run(self, stop: threading.Event, *, backoff_max: float = 30.0) -> None:
        """Poll until ``stop`` is set; temporary errors back off (``retry_after`` honoured).

        What cannot heal by waiting — Telegram refusing the token, a configuration error —
        ends the loop with :attr:`error` set (one line naming the setting, never the token).
        """
        delay = 1.0
        prepared = False
        while not stop.is_set():
            try:
                if not prepared:
                    self.prepare()
                    prepared = True
                self.poll_once()
                delay = 1.0
            except RetryLater as exc:
                wait = exc.retry_after if exc.retry_after is not None else delay
                log.warning("telegram %s: %s; again in %.0fs", self.bot.name, exc.reason, wait)
                stop.wait(wait)
                delay = min(delay * 2, backoff_max)
            except TelegramError as exc:
                if exc.code in (401, 404) and not prepared:  # 404: no such bot (bad token)
                    self.error = (
                        f"telegram {self.bot.name}: Telegram refused the token ({exc.code}) — "
                        f"check {self.token_setting}"
                    )
                    log.error("%s", self.error)
                    return
                log.error("telegram %s: %s; again in %.0fs", self.bot.name, exc.reason, delay)
                stop.wait(delay)
                delay = min(delay * 2, backoff_max)
            except ConfigError as exc:  # the update stays unread; waiting will not fix it
                self.error = f"telegram {self.bot.name}: configuration error: {exc}"
                log.error("%s", self.error)
                return
            except Exception as exc:  # database hiccup: the offset did not move, nothing lost
                log.error("telegram %s: %s; again in %.0fs", self.bot.name, reason(exc), delay)
                stop.wait(delay)
                delay = min(delay * 2, backoff_max)


def set_webhook(settings: TelegramSettings, bot: TelegramBot, client: BotApiClient) -> str:
    """Register ``{public_url}{webhook_path}/{bot}`` with Telegram; returns the URL."""
    if not settings.public_url:
        raise InputError("NEKOFLOW_TELEGRAM_PUBLIC_URL is required", field="public_url")
    if bot.secret_token is None:
        raise InputError(f"bot {bot.name} has no secret_token", field="secret_token")
    url = f"{settings.public_url}{settings.webhook_path}/{bot.name}"
    client.call(
        "setWebhook",
        {
            "url": url,
            "secret_token": bot.secret_token.get_secret_value(),
            "allowed_updates": settings.allowed_updates,
        },
    )
    return url


def run_gateways(
    engine: Engine, settings: TelegramSettings, bots: list[TelegramBot], submit: Submit
) -> list[str]:
    """Poll every given bot in its own thread until Ctrl-C or until every poller gave up;
    returns why they gave up (one line each)."""
    stop = threading.Event()
    gateways = [PollingGateway(engine, settings, bot, submit) for bot in bots]
    threads = [
        threading.Thread(target=gw.run, args=(stop,), name=f"telegram-{gw.bot.name}", daemon=True)
        for gw in gateways
    ]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            time.sleep(0.5)
    except KeyboardInterrupt:
        stop.set()
        for t in threads:
            t.join(timeout=5)
    return [gw.error for gw in gateways if gw.error]
