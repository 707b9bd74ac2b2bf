"""The service probes of ``nekoflow doctor``: database, Redis, broker, queue consumers, beat,
the model and the lease settings, each bounded by a short timeout."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from nekoflow.doctor.rules import (
    OPTIONAL_QUEUES,
    SPEECH_OFF,
    Check,
    beat_alive,
    lease_coherence,
    queue_consumers,
    routed_queues,
)
from nekoflow.settings import Settings, infer_llm_provider

SWEEP_KEY = "beat:last-sweep"
"""Redis key (under the prefix) holding the Unix time of the sweeper's last run."""


def short(exc: BaseException) -> str:
    """``Type: first line`` of an exception, bounded (a cut one ends in "…")."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {message}"
    return text if len(text) <= 200 else text[:199] + "…"


def where(url: str) -> str:
    """``scheme://host:port/path`` of a service URL, without credentials."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


def record_sweep(settings: Settings, client: Any = None) -> None:
    """Note in Redis that the sweeper ran now (what the beat check reads); never raises."""
    if not settings.redis_configured:
        return
    own = client is None
    try:
        if client is None:
            from nekoflow.redis_client import make_redis

            client = make_redis(settings.redis_url, retries=0)
        client.set(settings.redis_key(SWEEP_KEY), repr(time.time()), ex=7 * 24 * 3600)
    except Exception:  # a Redis hiccup never fails the sweep
        return
    finally:
        if own and client is not None:
            client.close()


def database(settings: Settings, timeout: float) -> Check:
    """Connect, and find the tables (created by the first worker, gateway or API start)."""
    from sqlalchemy import inspect

    from nekoflow.storage import make_engine

    url = settings.database_url
    path = url.split("///", 1)[1] if url.startswith("sqlite:///") else ""
    if path and path != ":memory:" and not Path(path).is_file():  # connecting would create it
        return Check(
            "database",
            False,
            f"{url}: no such file",
            "start a worker, gateway or `nekoflow serve` here once, or correct "
            "NEKOFLOW_DATABASE_URL (a relative SQLite path depends on the current directory)",
        )
    args: dict[str, Any] = {} if url.startswith("sqlite") else {"connect_timeout": int(timeout)}
    engine = make_engine(url, connect_args=args)
    shown = where(url) if not url.startswith("sqlite") else url
    try:
        with engine.connect() as conn:
            present = inspect(conn).has_table("turn_run")
    except Exception as exc:
        return Check(
            "database",
            False,
            f"{shown}: {short(exc)}",
            "start the database or correct NEKOFLOW_DATABASE_URL",
        )
    finally:
        engine.dispose()
    if not present:
        return Check(
            "database",
            False,
            f"{shown}: connected, but no nekoflow tables",
            "start a worker, gateway or `nekoflow serve` once (they create the schema), or "
            "point NEKOFLOW_DATABASE_URL at the right database",
        )
    return Check("database", True, f"{shown}: schema present")


def redis_client(settings: Settings, timeout: float) -> Any:
    """A Redis client for the doctor's reads: one try, short timeouts."""
    from nekoflow.redis_client import make_redis

    return make_redis(
        settings.redis_url, socket_timeout=timeout, connect_timeout=timeout, retries=0
    )


def redis_ping(settings: Settings, client: Any) -> Check:
    """``PING`` the configured Redis."""
    if not settings.redis_configured:
        return Check("redis", True, "not configured (in-process state; one process only)")
    try:
        client.ping()
    except Exception as exc:
        return Check(
            "redis",
            False,
            f"{where(settings.redis_url)}: {short(exc)}",
            "start Redis or correct NEKOFLOW_REDIS_URL",
        )
    return Check("redis", True, f"{where(settings.redis_url)}: PONG")


def broker(settings: Settings, timeout: float) -> Check:
    """Connect to the Celery broker with kombu: one try, bounded by ``timeout``."""
    url = settings.broker_url or ""
    if url.startswith("memory://"):
        return Check("broker", True, "memory:// (embedded, one process)")
    from kombu import Connection

    try:
        with Connection(
            url,
            connect_timeout=timeout,
            transport_options={"socket_timeout": timeout, "max_retries": 1},
        ) as conn:
            conn.ensure_connection(
                max_retries=1, interval_start=0, interval_step=0, timeout=timeout
            )
    except Exception as exc:
        return Check(
            "broker",
            False,
            f"{where(url)}: {short(exc)}",
            "start the broker or correct NEKOFLOW_BROKER_URL (default: NEKOFLOW_REDIS_URL)",
        )
    return Check("broker", True, where(url))


def consumers(settings: Settings, timeout: float) -> list[Check]:
    """Ask the running workers which queues they consume (``inspect().active_queues()``)."""
    from celery import Celery

    from nekoflow.queues import DEFAULT_QUEUE, TASK_ROUTES

    queues = routed_queues(DEFAULT_QUEUE, TASK_ROUTES)
    app = Celery("nekoflow-doctor", broker=settings.broker_url, set_as_current=False)
    app.conf.broker_connection_retry = False
    app.conf.broker_transport_options = {"socket_timeout": timeout, "max_retries": 1}
    try:
        active = app.control.inspect(timeout=timeout).active_queues()
    except Exception as exc:
        return [
            Check(
                f"queue {q}",
                False,
                f"workers not asked ({short(exc)})",
                "fix the broker first (NEKOFLOW_BROKER_URL)",
            )
            for q in queues
        ]
    finally:
        app.close()
    from nekoflow.speech.settings import get_speech_settings

    optional = OPTIONAL_QUEUES | ({} if get_speech_settings().enabled else SPEECH_OFF)
    return queue_consumers(queues, active, optional)


def beat(settings: Settings, client: Any) -> Check:
    """The sweeper's last run, recorded in Redis by the sweep task."""
    if not settings.redis_configured:
        return Check("beat", True, "not checked (no Redis: the embedded worker sweeps)")
    try:
        raw = client.get(settings.redis_key(SWEEP_KEY))
    except Exception as exc:
        return Check("beat", False, f"not readable ({short(exc)})", "fix Redis first")
    last = float(raw) if raw else None
    return beat_alive(last, time.time(), settings.sweep_interval_seconds)


def leases(settings: Settings) -> Check:
    """The lease and timeout settings against each other."""
    broker_url = settings.broker_url or ""
    return lease_coherence(
        turn_lease=settings.turn_lease_seconds,
        llm_lease=settings.llm_lease_seconds,
        llm_timeout=settings.llm_timeout,
        sweep_interval=settings.sweep_interval_seconds,
        visibility_timeout=settings.broker_visibility_timeout,
        uses_redis_broker=broker_url.startswith(("redis://", "rediss://")),
    )


def model(settings: Settings) -> list[Check]:
    """A tiny real request to the model (and a streamed one when streaming is on)."""
    from nekoflow.llm.factory import make_chat_model, model_host

    provider, why = infer_llm_provider(settings)
    if provider == "scripted":
        if settings.llm_provider == "scripted":
            return [Check("model", True, "scripted (NEKOFLOW_LLM_PROVIDER): canned replies")]
        return [
            Check(
                "model",
                False,
                f"scripted ({why}): every user gets offline canned replies",
                "set NEKOFLOW_LLM_BASE_URL and NEKOFLOW_LLM_MODEL (or NEKOFLOW_LLM_API_KEY for "
                "api.openai.com), or NEKOFLOW_LLM_PROVIDER=scripted to keep it",
            )
        ]
    what = f"openai ({why}) at {model_host(settings)}, model {settings.llm_model}"
    messages = [{"role": "user", "content": "ping"}]
    try:
        chat = make_chat_model(settings)
        result = chat.complete(messages, max_tokens=1)
    except Exception as exc:
        field = "NEKOFLOW_LLM_BASE_URL" if settings.llm_base_url else "NEKOFLOW_LLM_API_KEY"
        return [
            Check(
                "model",
                False,
                f"{what}: {short(exc)}",
                f"start the model server or correct {field} / NEKOFLOW_LLM_MODEL",
            )
        ]
    checks = [Check("model", True, f"{what}: answered in {result.latency_ms:.0f} ms")]
    if settings.llm_stream:
        checks.append(stream_usage(chat, messages))
    return checks


def stream_usage(chat: Any, messages: list[dict[str, str]]) -> Check:
    """Whether the server reports token usage in streamed answers."""
    try:
        result = chat.stream(messages, lambda _piece: None, max_tokens=1)
    except Exception as exc:
        return Check(
            "model streaming",
            False,
            short(exc),
            "set NEKOFLOW_LLM_STREAM=false if this server cannot stream",
        )
    if result.prompt_tokens is None or getattr(result, "usage_estimated", False):
        return Check(
            "model streaming",
            False,
            "the server sends no token usage in streams (usage would be estimated)",
            "enable usage in streams on the server (stream_options.include_usage), or "
            "NEKOFLOW_LLM_STREAM=false for exact counts",
        )
    return Check("model streaming", True, "usage reported in streams")
