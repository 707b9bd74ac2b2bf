"""``make_chat_model``: the configured ChatModel (scripted or OpenAI-compatible) from settings,
and ``describe_model``: the one line naming the provider, server and model a process uses."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from nekoflow.errors import ConfigError
from nekoflow.llm.base import ChatModel
from nekoflow.llm.scripted import ScriptedChatModel
from nekoflow.settings import Settings, get_settings, infer_llm_provider

OFFICIAL_HOST = "api.openai.com"
"""The host the OpenAI SDK talks to when no base URL is set."""


def make_chat_model(settings: Settings | None = None) -> ChatModel:
    """The chat model in use: ``NEKOFLOW_LLM_PROVIDER`` when set, else inferred (``openai``
    when ``NEKOFLOW_LLM_BASE_URL`` or ``NEKOFLOW_LLM_API_KEY`` is set, ``scripted`` otherwise).

    ``openai`` needs ``NEKOFLOW_LLM_BASE_URL`` for a self-hosted/compatible server; without it the
    official OpenAI endpoint is used, which needs ``NEKOFLOW_LLM_API_KEY``. The SDK is imported
    only when the OpenAI provider is chosen.
    """
    settings = settings if settings is not None else get_settings()
    provider = settings.effective_llm_provider
    if provider == "scripted":
        return ScriptedChatModel()
    if provider == "openai":
        from nekoflow.llm.openai_client import OpenAIChatModel

        has_key = (
            settings.llm_api_key is not None and settings.llm_api_key.get_secret_value().strip()
        )
        if settings.llm_base_url is None and not has_key:
            raise ConfigError(
                "NEKOFLOW_LLM_API_KEY: required when NEKOFLOW_LLM_PROVIDER=openai talks to the "
                "official OpenAI endpoint; set NEKOFLOW_LLM_BASE_URL for a local "
                "OpenAI-compatible server (vLLM, Ollama, llama.cpp) that needs no key",
                field="llm_api_key",
            )
        return OpenAIChatModel.from_settings(settings)
    raise ConfigError(  # pragma: no cover - Settings only admits the two providers
        f"NEKOFLOW_LLM_PROVIDER: unknown provider {provider!r} (scripted, openai)",
        field="llm_provider",
    )


def model_host(settings: Settings) -> str:
    """The host (and port) of the model server, without any credentials in the URL."""
    if not settings.llm_base_url:
        return OFFICIAL_HOST
    parts = urlsplit(settings.llm_base_url.strip())
    host = parts.hostname or "?"
    return f"{host}:{parts.port}" if parts.port is not None else host


def describe_model(settings: Settings, environ: Mapping[str, str] | None = None) -> tuple[int, str]:
    """The log level and the line naming the model provider (and why), host and model.

    WARNING when the offline scripted model was not chosen explicitly: a bot would answer every
    user with canned replies. ``environ`` (default ``os.environ``) is only read for the
    ``OPENAI_*`` variables nekoflow does not use, to name the right ones instead.
    """
    environ = os.environ if environ is None else environ
    provider, why = infer_llm_provider(settings)
    if provider == "openai":
        return logging.INFO, (
            f"model: provider openai ({why}), server {model_host(settings)}, "
            f"model {settings.llm_model}"
        )
    if settings.llm_provider == "scripted":
        return (
            logging.INFO,
            "model: provider scripted (NEKOFLOW_LLM_PROVIDER): offline canned replies",
        )
    foreign = [name for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL") if environ.get(name)]
    hint = (
        f"; {' and '.join(foreign)} set but not read by nekoflow: use NEKOFLOW_LLM_API_KEY / "
        "NEKOFLOW_LLM_BASE_URL"
        if foreign
        else ""
    )
    return logging.WARNING, (
        f"model: provider scripted ({why}): offline canned replies, no real model — set "
        f"NEKOFLOW_LLM_BASE_URL and NEKOFLOW_LLM_MODEL for your model server, or "
        f"NEKOFLOW_LLM_PROVIDER=scripted to keep it{hint}"
    )
