"""``make_chat_model``: the configured ChatModel (scripted or OpenAI-compatible) from settings."""

from __future__ import annotations

from nekoflow.errors import ConfigError
from nekoflow.llm.base import ChatModel
from nekoflow.llm.scripted import ScriptedChatModel
from nekoflow.settings import Settings, get_settings


def make_chat_model(settings: Settings | None = None) -> ChatModel:
    """The chat model ``NEKOFLOW_LLM_PROVIDER`` selects (``scripted`` is the default).

    ``openai`` needs ``NEKOFLOW_LLM_BASE_URL`` for a self-hosted/compatible server; without it the
    official OpenAI endpoint is used, which needs ``NEKOFLOW_LLM_API_KEY``. The SDK is imported
    only when the OpenAI provider is chosen.
    """
    settings = settings if settings is not None else get_settings()
    provider = settings.llm_provider
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
