"""Start-up checks of a worker: state that several processes must share may not stay in one."""

from __future__ import annotations

import logging
import sys
from typing import Any

from celery.signals import worker_init, worker_ready

from nekoflow.settings import get_settings

log = logging.getLogger("nekoflow.startup")


def in_process_state_warning(broker_url: str) -> str | None:
    """The warning for a multi-process deployment whose shared state stays in each process
    (None when everything is shared, or on the embedded in-memory broker)."""
    if broker_url.startswith("memory://"):
        return None
    local = get_settings().in_process_shared_state()
    if not local:
        return None
    return (
        "IN-PROCESS STATE IN A MULTI-PROCESS DEPLOYMENT: "
        + ", ".join(local)
        + " resolved to 'memory', so each worker process keeps its own copy (world-book "
        "cooldowns disagree between workers and vanish on restart; AutoState and events are "
        "not seen by other processes). Set NEKOFLOW_REDIS_URL (they then default to Redis) or "
        "set them to 'redis' explicitly."
    )


@worker_init.connect
def _check_shared_state(sender: Any = None, **_: Any) -> None:
    app = getattr(sender, "app", None)
    broker = str(getattr(getattr(app, "conf", None), "broker_url", "") or "")
    warning = in_process_state_warning(broker)
    if warning:
        log.warning(warning)


@worker_ready.connect
def _name_the_model(**_: Any) -> None:
    """One line naming the model provider, server and model this worker answers with."""
    from nekoflow.llm.factory import describe_model

    try:
        level, line = describe_model(get_settings())
    except Exception as exc:  # bad settings are reported by the tasks themselves
        log.error("model: settings unreadable (%s)", type(exc).__name__)
        return
    if log.getEffectiveLevel() > level:  # shown at the worker's default level (WARNING) too
        log.setLevel(level)
    log.log(level, line)


@worker_init.connect
def _check_model(sender: Any = None, **_: Any) -> None:
    """A broken model configuration stops the worker at start with one line naming the
    variable (instead of failing every turn later)."""
    from nekoflow.errors import ConfigError
    from nekoflow.llm.factory import make_chat_model

    try:
        make_chat_model(get_settings())
    except ConfigError as exc:
        print(f"error: configuration error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


@worker_init.connect
def _check_speech(sender: Any = None, **_: Any) -> None:
    """Broken speech settings (``NEKOFLOW_SPEECH_*``) stop the worker at start with the field
    named, instead of failing every voiced reply later."""
    from pydantic import ValidationError

    from nekoflow.speech.settings import get_speech_settings

    try:
        get_speech_settings()
    except ValidationError as exc:
        fields = ", ".join(
            "NEKOFLOW_SPEECH_" + str(e["loc"][0]).upper() for e in exc.errors() if e["loc"]
        )
        message = exc.errors()[0]["msg"]
        print(
            f"error: configuration error: {fields or 'NEKOFLOW_SPEECH_*'}: {message}",
            file=sys.stderr,
            flush=True,
        )
        raise SystemExit(2) from None
