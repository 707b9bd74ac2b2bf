"""A broken or unreachable model never fails silently: a worker with a broken model
configuration stops at start with one line naming the variable, and a turn whose model server
is down says which host (NEKOFLOW_LLM_BASE_URL) in its reason and its retry reasons."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nekoflow.llm import LLMConnectionError, OpenAIChatModel
from nekoflow.redact import safe_error
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline
from tests.platforms.gateway_proc import free_port
from tests.turns.conftest import REPO, deps, published, role  # noqa: F401  (fixtures)


@pytest.mark.slow
def test_a_worker_with_a_broken_model_configuration_stops_at_start(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env.update(
        NEKOFLOW_DATABASE_URL=f"sqlite:///{tmp_path / 'w.db'}",
        NEKOFLOW_BROKER_URL="memory://",
        NEKOFLOW_LLM_PROVIDER="openai",  # no base URL and no key: nothing to talk to
        PYTHONPATH=str(REPO),
    )
    cmd = [sys.executable, "-m", "celery", "-A", "tasks", "worker", "-P", "solo"]
    cmd += ["--without-gossip", "--without-mingle", "-l", "INFO"]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "ready." not in out and "Traceback" not in out
    lines = [ln for ln in out.splitlines() if ln.startswith("error:")]
    assert lines == [
        "error: configuration error: NEKOFLOW_LLM_API_KEY: required when "
        "NEKOFLOW_LLM_PROVIDER=openai talks to the official OpenAI endpoint; set "
        "NEKOFLOW_LLM_BASE_URL for a local OpenAI-compatible server (vLLM, Ollama, llama.cpp) "
        "that needs no key"
    ], out


def test_an_unreachable_model_server_is_named_by_its_host(deps) -> None:  # noqa: F811
    port = free_port()  # nothing listens there
    model = OpenAIChatModel(f"http://127.0.0.1:{port}/v1", "m", timeout=2, connect_timeout=1)
    with pytest.raises(LLMConnectionError) as caught:
        model.complete([{"role": "user", "content": "你好"}])
    assert safe_error(caught.value) == f"LLMConnectionError (model server 127.0.0.1:{port})"

    deps.chat_model = model
    handle = submit_turn(deps, "web", {"session_id": "s", "message": "你好", "user_id": "u1"})
    assert run_inline(deps, handle.turn_id, sleep=False) == "failed"
    run = handle.run()
    assert run.reason.endswith(f"LLMConnectionError (model server 127.0.0.1:{port})"), run.reason
    model.close()
