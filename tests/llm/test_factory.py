"""make_chat_model: the provider setting picks the scripted or the OpenAI-compatible model."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from nekoflow.errors import ConfigError
from nekoflow.llm import OpenAIChatModel, ScriptedChatModel, make_chat_model
from nekoflow.settings import Settings


def test_scripted_is_the_default() -> None:
    model = make_chat_model(Settings())
    assert isinstance(model, ScriptedChatModel)
    assert model.name == "scripted"


def test_openai_with_a_local_base_url_needs_no_key() -> None:
    settings = Settings(
        llm_provider="openai", llm_base_url="http://127.0.0.1:11434/v1", llm_model="qwen2.5"
    )
    model = make_chat_model(settings)
    assert isinstance(model, OpenAIChatModel)
    assert model.name == "openai:qwen2.5"
    assert model.base_url == "http://127.0.0.1:11434/v1"
    assert not model.has_api_key


def test_openai_endpoint_with_a_key() -> None:
    settings = Settings(llm_provider="openai", llm_api_key=SecretStr("sk-abc"), llm_timeout=12)
    model = make_chat_model(settings)
    assert isinstance(model, OpenAIChatModel)
    assert model.base_url == "https://api.openai.com/v1"
    assert model.has_api_key
    assert model.timeout == 12
    assert "sk-abc" not in repr(model)


@pytest.mark.parametrize("key", [None, "", "   "])
def test_openai_endpoint_without_a_key_is_a_config_error(key: str | None) -> None:
    settings = Settings(llm_provider="openai", llm_api_key=key)
    with pytest.raises(ConfigError, match="NEKOFLOW_LLM_API_KEY") as info:
        make_chat_model(settings)
    assert info.value.field == "llm_api_key"
    assert "NEKOFLOW_LLM_BASE_URL" in str(info.value)


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEKOFLOW_LLM_PROVIDER", "openai")
    monkeypatch.setenv("NEKOFLOW_LLM_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("NEKOFLOW_LLM_MODEL", "Qwen/Qwen2.5-7B-Instruct")
    monkeypatch.setenv("NEKOFLOW_LLM_CONNECT_TIMEOUT", "2.5")
    model = make_chat_model(Settings())
    assert isinstance(model, OpenAIChatModel)
    assert (model.model, model.connect_timeout) == ("Qwen/Qwen2.5-7B-Instruct", 2.5)


def test_a_blank_temperature_sends_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """``NEKOFLOW_LLM_TEMPERATURE=`` (reasoning models refuse one) and a blank max tokens."""
    monkeypatch.setenv("NEKOFLOW_LLM_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("NEKOFLOW_LLM_TEMPERATURE", "")
    monkeypatch.setenv("NEKOFLOW_LLM_MAX_TOKENS", " ")
    model = make_chat_model(Settings())
    assert isinstance(model, OpenAIChatModel)
    assert (model.temperature, model.max_tokens) == (None, None)
