"""A bad configuration is one line naming the real variable (and field), never a traceback, and
never prints a URL's password back: the real ``nekoflow`` CLI and a real Celery worker in
subprocesses, each with one bad environment variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nekoflow.redact import redact_urls

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "hunter2-s3cret"


def run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    base.update(NEKOFLOW_DATABASE_URL=f"sqlite:///{tmp_path / 'cli.db'}", COLUMNS="80")
    base.update(env)
    return subprocess.run(args, cwd=tmp_path, env=base, capture_output=True, text=True, timeout=120)


def nekoflow(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "nekoflow", *args], tmp_path, **env)


def one_line(out: subprocess.CompletedProcess[str]) -> str:
    """The single error line of a refused start (exit 2, no traceback)."""
    text = out.stdout + out.stderr
    assert out.returncode == 2, text
    assert "Traceback" not in text and "╭" not in text, text
    # `serve` names the model it will use first (a line of its own, never about the error)
    lines = [
        line
        for line in out.stderr.splitlines()
        if line.strip() and not line.startswith("WARNING:  model:")
    ]
    assert len(lines) == 1, text
    return lines[0]


BAD_SETTINGS = [
    # (command, variable, value, what the line must say)
    (["serve"], "NEKOFLOW_ONEBOT_BOTS", "[{bad", "NEKOFLOW_ONEBOT_BOTS cannot be parsed as JSON"),
    (["serve"], "NEKOFLOW_TELEGRAM_BOTS", "{", "NEKOFLOW_TELEGRAM_BOTS cannot be parsed as JSON"),
    (["serve"], "NEKOFLOW_QQBOT_BOTS", "[1", "NEKOFLOW_QQBOT_BOTS cannot be parsed as JSON"),
    (["serve"], "NEKOFLOW_FEISHU_APPS", "[", "NEKOFLOW_FEISHU_APPS cannot be parsed as JSON"),
    (
        ["serve"],
        "NEKOFLOW_ONEBOT_BOTS",
        '[{"self_id": "not-digits"}]',
        "NEKOFLOW_ONEBOT_BOTS: [0].self_id: must be the bot's QQ number",
    ),
    (
        ["serve"],
        "NEKOFLOW_TELEGRAM_BOTS",
        '[{"name": "neko"}]',
        "NEKOFLOW_TELEGRAM_BOTS: [0].token: Field required",
    ),
    (
        ["runs"],
        "NEKOFLOW_LLM_BASE_URL",
        "not a url",
        "NEKOFLOW_LLM_BASE_URL: not an http(s):// URL",
    ),
    (
        ["runs"],
        "NEKOFLOW_LLM_LEASE_SECONDS",
        "30",
        "NEKOFLOW_LLM_LEASE_SECONDS (30 s) must not exceed NEKOFLOW_TURN_LEASE_SECONDS (20 s)",
    ),
    (
        ["gateway", "onebot"],
        "NEKOFLOW_ONEBOT_BOTS",
        '[{"self_id": "not-digits"}]',
        "NEKOFLOW_ONEBOT_BOTS: [0].self_id: must be the bot's QQ number",
    ),
    (
        ["gateway", "telegram"],
        "NEKOFLOW_TELEGRAM_BOTS",
        '[{"name": "neko"}]',
        "NEKOFLOW_TELEGRAM_BOTS: [0].token: Field required",
    ),
]


@pytest.mark.parametrize(("command", "variable", "value", "expected"), BAD_SETTINGS)
def test_a_bad_setting_is_one_line_naming_its_variable(
    tmp_path: Path, command: list[str], variable: str, value: str, expected: str
) -> None:
    line = one_line(nekoflow(command, tmp_path, **{variable: value}))
    assert expected in line, line
    assert "NEKOFLOW_BOTS" not in line and "NEKOFLOW_: " not in line


@pytest.mark.parametrize(
    ("variable", "url"),
    [
        ("NEKOFLOW_DATABASE_URL", f"mysql://admin:{PASSWORD}@db/nekoflow"),
        ("NEKOFLOW_DATABASE_URL", f"postgresql://admin:{PASSWORD}@db:notaport/nekoflow"),
        ("NEKOFLOW_REDIS_URL", f"http://:{PASSWORD}@redis:6379/0"),
        ("NEKOFLOW_BROKER_URL", f"redis://:{PASSWORD}@127.0.0.1:99999/0"),
    ],
)
def test_a_bad_url_never_prints_its_password(tmp_path: Path, variable: str, url: str) -> None:
    line = one_line(nekoflow(["runs"], tmp_path, **{variable: url}))
    assert variable in line and PASSWORD not in line
    assert ":***@" in line


def test_a_worker_with_a_bad_url_does_not_print_its_password(tmp_path: Path) -> None:
    url = f"mysql://admin:{PASSWORD}@db/nekoflow"
    out = run(
        [sys.executable, "-m", "celery", "-A", "tasks", "worker", "-Q", "turns", "-c", "1"],
        tmp_path,
        NEKOFLOW_DATABASE_URL=url,
        PYTHONPATH=str(REPO),
    )
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "database_url" in text
    assert PASSWORD not in text


def test_redact_urls() -> None:
    assert redact_urls("x postgresql://app:pw@db:5432/n y") == "x postgresql://app:***@db:5432/n y"
    assert redact_urls("'redis://:pw@r/0'") == "'redis://:***@r/0'"
    assert redact_urls("amqp://guest@h//, https://h/a:b@c") == "amqp://guest@h//, https://h/a:b@c"
