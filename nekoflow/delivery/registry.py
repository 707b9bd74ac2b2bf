"""Which sender, destination and rate limits belong to a platform (pure registry).

Platform packages register themselves in a module ``nekoflow.platforms.<name>.delivery``, which
:func:`load_platforms` imports for every package under ``nekoflow.platforms`` that has one:

    register_destination("telegram", telegram_destination)   # channel → Destination | None
    register_sender("telegram", make_telegram_sender)        # platform → factory(bot, settings)
    register_rate_limits("telegram", telegram_limits)        # platform → dest → [RateLimit]
    register_bot_options("telegram", telegram_bot_options)   # channel → bot → adapter options

The platforms are found by name (:data:`PLATFORMS`), never imported here: they import this.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nekoflow.channels.context import ChatRequest
from nekoflow.delivery.base import Destination, RateLimit, Sender

if TYPE_CHECKING:
    from nekoflow.storage.turns import TurnRun

#: factory(bot, settings) → Sender; ``settings`` is the process's ``nekoflow.settings.Settings``.
SenderFactory = Callable[[str, Any], Sender]
#: (request: ChatRequest, bot: str | None) → Destination | None.
DestinationFn = Callable[[Any, str | None], Destination | None]
RateLimitFn = Callable[[Destination], list[RateLimit]]
#: bot (None: the platform's default) → the adapter options that bot's own settings give.
BotOptionsFn = Callable[[str | None], dict[str, Any]]

PLATFORMS = "nekoflow.platforms"
"""The package whose sub-packages are the platforms."""

_senders: dict[str, SenderFactory] = {}
_destinations: dict[str, DestinationFn] = {}
_rate_limits: dict[str, RateLimitFn] = {}
_bot_options: dict[str, BotOptionsFn] = {}
_cache: dict[tuple[str, str, int], Sender] = {}
_lock = threading.Lock()
_loaded = False


def register_sender(platform: str, factory: SenderFactory) -> None:
    """Register the sender factory of ``platform`` (a later call replaces it)."""
    with _lock:
        _senders[platform] = factory
        for key in [k for k in _cache if k[0] == platform]:
            del _cache[key]


def register_destination(channel: str, fn: DestinationFn) -> None:
    """Register how a channel's ChatRequest becomes a Destination (None: nowhere to send)."""
    _destinations[channel] = fn


def register_rate_limits(platform: str, fn: RateLimitFn) -> None:
    """Register the default rate limits of ``platform``'s destinations."""
    _rate_limits[platform] = fn


def register_bot_options(channel: str, fn: BotOptionsFn) -> None:
    """Register the adapter options a ``channel`` bot's own settings give (its username)."""
    _bot_options[channel] = fn


def load_platforms() -> None:
    """Import every ``nekoflow.platforms.<name>.delivery`` module once (they register)."""
    global _loaded
    if _loaded:
        return
    platforms = importlib.import_module(PLATFORMS)
    for info in pkgutil.iter_modules(platforms.__path__):
        if not info.ispkg:
            continue
        name = f"{PLATFORMS}.{info.name}.delivery"
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
    _loaded = True


def destination_for(channel: str, request: Any, bot: str | None) -> Destination | None:
    """The destination of a reply to ``request`` on ``channel``; None when it has no sender."""
    load_platforms()
    fn = _destinations.get(channel)
    return None if fn is None else fn(request, bot)


def sender_for(platform: str, bot: str, settings: Any) -> Sender | None:
    """The (cached, per settings object) sender of ``platform``'s ``bot``; None if unknown."""
    load_platforms()
    factory = _senders.get(platform)
    if factory is None:
        return None
    key = (platform, bot, id(settings))
    with _lock:
        sender = _cache.get(key)
        if sender is None:
            sender = factory(bot, settings)
            _cache[key] = sender
        return sender


def rate_limits_for(dest: Destination) -> list[RateLimit]:
    """The platform's default rate limits for ``dest`` (none when it registered none)."""
    load_platforms()
    fn = _rate_limits.get(dest.platform)
    return [] if fn is None else fn(dest)


def bot_options_for(channel: str, bot: str | None) -> dict[str, Any]:
    """The adapter options ``channel``'s ``bot`` brings itself (empty when none registered)."""
    load_platforms()
    fn = _bot_options.get(channel)
    return {} if fn is None else fn(bot)


def has_sender(platform: str) -> bool:
    """True when ``platform`` has a registered sender."""
    load_platforms()
    return platform in _senders


def clear_senders() -> None:
    """Forget the cached senders (after settings changed: tests, reconfiguration)."""
    with _lock:
        _cache.clear()


def plan_delivery(run: TurnRun) -> Destination | None:
    """Where ``run``'s reply goes, or None (deliver=False, a channel without a sender, no
    destination in the request). Pure: reads the stored request only."""
    if run.deliver is False:
        return None
    try:
        request = ChatRequest.model_validate(run.request)
    except ValueError:
        return None
    return destination_for(run.channel, request, run.bot)
