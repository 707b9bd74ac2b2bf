"""The model provider is inferred from NEKOFLOW_LLM_BASE_URL / _API_KEY and named at start."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import SecretStr

from nekoflow.llm import OpenAIChatModel, ScriptedChatModel, make_chat_model
from nekoflow.llm.factory import describe_model
from nekoflow.settings import Settings, infer_llm_provider

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("fields", "provider", "why"),
    [
        ({}, "scripted", "no NEKOFLOW_LLM_BASE_URL or NEKOFLOW_LLM_API_KEY set"),
        ({"llm_base_url": "http://127.0.0.1:8000/v1"}, "openai", "NEKOFLOW_LLM_BASE_URL"),
        ({"llm_api_key": SecretStr("sk-x")}, "openai", "NEKOFLOW_LLM_API_KEY"),
        ({"llm_api_key": SecretStr("  ")}, "scripted", "no NEKOFLOW_LLM_BASE_URL"),
        ({"llm_provider": "scripted", "llm_base_url": "http://h/v1"}, "scripted", "PROVIDER"),
        ({"llm_provider": "openai", "llm_base_url": "http://h/v1"}, "openai", "PROVIDER"),
        ({"llm_provider": "", "llm_base_url": "http://h/v1"}, "openai", "BASE_URL"),
    ],
)
def test_provider_inference(fields: dict, provider: str, why: str) -> None:
    settings = Settings(**fields)
    assert settings.effective_llm_provider == provider
    got, reason = infer_llm_provider(settings)
    assert got == provider and why in reason


def test_base_url_and_model_alone_give_the_openai_model(monkeypatch: pytest.MonkeyPatch) -> None:
    # The issue: BASE_URL and MODEL set, PROVIDER unset, and the bot answered with the scripted
    # model. Now the base URL picks the OpenAI-compatible client.
    monkeypatch.delenv("NEKOFLOW_LLM_PROVIDER", raising=False)
    monkeypatch.setenv("NEKOFLOW_LLM_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("NEKOFLOW_LLM_MODEL", "qwen2.5")
    model = make_chat_model(Settings())
    assert isinstance(model, OpenAIChatModel)
    assert (model.base_url, model.model) == ("http://127.0.0.1:8000/v1", "qwen2.5")


def test_nothing_configured_is_still_the_scripted_model() -> None:
    assert isinstance(make_chat_model(Settings()), ScriptedChatModel)


def test_description_names_provider_host_and_model_without_credentials() -> None:
    settings = Settings(llm_base_url="http://user:pw@10.0.0.5:8000/v1", llm_model="qwen2.5")
    level, line = describe_model(settings, environ={})
    assert level == logging.INFO
    assert line == (
        "model: provider openai (inferred from NEKOFLOW_LLM_BASE_URL), "
        "server 10.0.0.5:8000, model qwen2.5"
    )
    level, line = describe_model(Settings(llm_api_key=SecretStr("sk-secret")), environ={})
    assert "server api.openai.com" in line and "sk-secret" not in line


def test_inferred_scripted_model_is_a_warning_naming_the_settings() -> None:
    level, line = describe_model(Settings(), environ={"OPENAI_API_KEY": "sk-x"})
    assert level == logging.WARNING
    assert "provider scripted" in line and "NEKOFLOW_LLM_BASE_URL" in line
    assert "OPENAI_API_KEY set but not read" in line and "sk-x" not in line
    level, line = describe_model(Settings(llm_provider="scripted"), environ={})
    assert level == logging.INFO and "OPENAI" not in line


def _wait_for_line(log: Path, needle: str, proc: subprocess.Popen) -> str:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if needle in text:
            return text
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError(f"{needle!r} not in the worker's log:\n{log.read_text()[-3000:]}")


def test_worker_names_the_inferred_provider_at_start(
    worker_env: dict[str, str], tmp_path: Path
) -> None:
    # A real worker at Celery's default log level (no -l): the line is shown all the same.
    env = {
        **worker_env,
        "NEKOFLOW_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "NEKOFLOW_LLM_MODEL": "qwen-test",
    }
    log = tmp_path / "worker.log"
    cmd = [sys.executable, "-m", "celery", "-A", "tasks", "worker", "-Q", "turns", "-c", "1"]
    cmd += ["-n", f"model-line-{os.getpid()}@%h", "--without-gossip", "--without-mingle"]
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        text = _wait_for_line(log, "model: provider openai", proc)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert (
        "model: provider openai (inferred from NEKOFLOW_LLM_BASE_URL), "
        "server 127.0.0.1:9, model qwen-test" in text
    )
