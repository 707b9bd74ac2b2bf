"""The quick starts' commands, exercised so the docs cannot rot.

Commands are marked in the markdown with an HTML comment before their fenced block:
``<!-- qs: run -->`` (run it, it must succeed), ``<!-- qs: env -->`` (``export`` lines),
``<!-- qs: background wait="…" -->`` (a long-running process: started, the text awaited in its
output, stopped at the end), ``<!-- qs: doctor -->`` and ``<!-- qs: compose -->`` (docker compose:
checked against docker-compose.yml, never run). Every page's commands must parse against the
real CLI and Celery app; the Chinese and English page of a platform must give the same commands;
the NapCat quick start (the recommended set-up) is run end to end — the card import, the gateway,
workers and beat as real processes, a loopback NapCat and a loopback OpenAI-compatible model —
up to the first reply on the socket.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shlex
import signal
import socket
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REDIS_URL, XDIST_WORKER
from tests.platforms.onebot.conftest import private_event
from tests.platforms.onebot.fake_onebot import FakeNapCat
from tests.turns.llm_server import FakeLLM, completion

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PLATFORMS = ("napcat", "telegram", "qqbot", "feishu", "web")
PAGES = [DOCS / lang / "quickstart" / f"{p}.md" for lang in ("en", "zh") for p in PLATFORMS]
MARK = re.compile(r"<!-- qs: (\w+)((?: \w+=\"[^\"]*\")*) -->\n```\w*\n(.*?)\n```", re.S)


@dataclass
class Block:
    """One marked fenced block of a quick start."""

    kind: str
    attrs: dict[str, str]
    text: str
    commands: list[str] = field(default_factory=list)


def blocks(page: Path) -> list[Block]:
    """The marked blocks of ``page``, each with its command lines (comments dropped)."""
    out = []
    for kind, attrs, text in MARK.findall(page.read_text(encoding="utf-8")):
        block = Block(kind, dict(re.findall(r"(\w+)=\"([^\"]*)\"", attrs)), text)
        for line in text.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                block.commands.append(line)
        out.append(block)
    return out


def exports(page: Path) -> dict[str, str]:
    """Every ``export NAME=value`` of the page's env blocks."""
    env = {}
    for block in blocks(page):
        if block.kind == "env":
            for line in block.commands:
                name, _, value = line.removeprefix("export ").partition("=")
                env[name] = value
    return env


def test_every_quick_start_has_its_steps() -> None:
    """Each page: install, model, card import, processes, doctor, runs, compose."""
    for page in PAGES:
        kinds = [b.kind for b in blocks(page)]
        assert {"run", "env", "background", "doctor", "compose"} <= set(kinds), page
        text = " ".join(c for b in blocks(page) for c in b.commands)
        for needed in (
            "nekoflow character import",
            "NEKOFLOW_LLM_BASE_URL",
            "NEKOFLOW_LLM_MODEL",
            "NEKOFLOW_LLM_API_KEY",
            "celery -A nekoflow.worker beat",
            "nekoflow doctor",
            "nekoflow runs",
        ):
            assert needed in text, f"{page.relative_to(REPO)} lacks {needed!r}"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_chinese_and_english_give_the_same_commands(platform: str) -> None:
    en = blocks(DOCS / "en" / "quickstart" / f"{platform}.md")
    zh = blocks(DOCS / "zh" / "quickstart" / f"{platform}.md")
    assert [(b.kind, b.attrs, b.commands) for b in zh] == [
        (b.kind, b.attrs, b.commands) for b in en
    ]


def _cli_commands(page: Path) -> list[list[str]]:
    """Every ``nekoflow …`` command of the page (also inside ``docker compose run/exec``)."""
    found = []
    for block in blocks(page):
        for line in block.commands:
            if "<<" in line or "=" in line.split()[0]:
                continue
            words = shlex.split(line.replace("$(", "(").replace("$PWD", "."))
            if "nekoflow" in words:
                found.append(words[words.index("nekoflow") + 1 :])
    return found


def test_every_nekoflow_command_parses() -> None:
    """Each ``nekoflow`` command of every quick start names a real command and real options."""
    import typer

    from nekoflow.cli import app

    root = typer.main.get_command(app)
    for page in PAGES:
        for args in _cli_commands(page):
            ctx = root.make_context("nekoflow", ["--help"], resilient_parsing=True)
            command, rest = root, list(args)
            while hasattr(command, "list_commands") and rest:
                sub = command.get_command(ctx, rest[0])
                assert sub is not None, f"{page.relative_to(REPO)}: no command {args}"
                command, rest = sub, rest[1:]
                ctx = command.make_context(command.name, [], parent=ctx, resilient_parsing=True)
            command.make_context(command.name, rest, parent=ctx.parent)  # raises on a bad option


def test_celery_commands_name_real_queues() -> None:
    import celeryconfig

    queues = {celeryconfig.task_default_queue} | {
        r["queue"] for r in celeryconfig.task_routes.values()
    }
    for page in PAGES:
        for block in blocks(page):
            for line in block.commands:
                words = shlex.split(line)
                if words[:3] != ["celery", "-A", "nekoflow.worker"]:
                    continue
                assert words[3] in ("worker", "beat"), line
                if "-Q" in words:
                    named = set(words[words.index("-Q") + 1].split(","))
                    assert named <= queues, f"{page.relative_to(REPO)}: {named - queues}"


def test_compose_variants_agree_with_the_compose_file() -> None:
    """Services and profiles the compose sections name exist; the variables they put in .env
    are passed by docker-compose.yml."""
    compose_text = (REPO / "docker-compose.yml").read_text(encoding="utf-8")
    compose = yaml.safe_load(compose_text)
    services = compose["services"]
    profiles = {p for s in services.values() for p in s.get("profiles", [])}
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        section = text.split("\n## ")[-1]
        (block,) = [b for b in blocks(page) if b.kind == "compose"]
        env_lines = block.text.split("<<'ENV'\n", 1)[1].split("\nENV", 1)[0].splitlines()
        for line in env_lines:
            name = line.split("=", 1)[0]
            assert name in compose_text, f"{page.relative_to(REPO)}: {name} not in compose"
        for line in block.commands:
            words = shlex.split(line)
            if words[:2] != ["docker", "compose"]:
                continue
            if "--profile" in words:
                assert words[words.index("--profile") + 1] in profiles, line
            for verb in ("run", "exec"):
                if verb in words:
                    service = [w for w in words[words.index(verb) + 1 :] if not w.startswith("-")]
                    if verb == "run":  # skip the -v argument's value
                        service = [w for w in service if ":" not in w]
                    assert service[0] in services, line
        for name in re.findall(r"`((?:worker|gateway)-[a-z]+|beat|api)`", section):
            assert name in services, f"{page.relative_to(REPO)}: no compose service {name}"


# ------------------------------------------------------------------ the NapCat quick start, run


def card_png(card: dict[str, Any]) -> bytes:
    """A 1×1 PNG carrying ``card`` in a ``chara`` tEXt chunk, as SillyTavern writes it."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    chara = base64.b64encode(json.dumps(card, ensure_ascii=False).encode())
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
        + chunk(b"tEXt", b"chara\x00" + chara)
        + chunk(b"IDAT", zlib.compress(b"\x00\x00"))
        + chunk(b"IEND", b"")
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Processes:
    """The quick start's long-running commands, each in its own session, stopped at the end."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd, self.env = cwd, env
        self.procs: list[tuple[subprocess.Popen, Path]] = []

    def start(self, command: str, wait: str | None) -> None:
        log = self.cwd / f"proc{len(self.procs)}.log"
        proc = subprocess.Popen(
            ["bash", "-c", f"exec {command}"],
            cwd=self.cwd,
            env=self.env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append((proc, log))
        deadline = time.monotonic() + 60
        while wait and wait not in log.read_text(errors="replace"):
            assert proc.poll() is None, f"{command} exited:\n{self.logs()}"
            assert time.monotonic() < deadline, f"{command}: no {wait!r}\n{self.logs()}"
            time.sleep(0.1)

    def logs(self) -> str:
        return "\n".join(log.read_text(errors="replace")[-2000:] for _, log in self.procs)

    def stop(self) -> None:
        for proc, _ in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc, _ in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


@pytest.fixture
def quickstart_dir(tmp_path: Path, redis_client) -> Iterator[Path]:
    """An empty folder holding only the user's card, as the quick start assumes."""
    card = json.loads((REPO / "examples" / "character_card.json").read_text(encoding="utf-8"))
    (tmp_path / "card.png").write_bytes(card_png(card))
    yield tmp_path


def reader_env(page: Path, llm: FakeLLM, **extra: str) -> dict[str, str]:
    """The page's exports, with only the reader's addresses pointed at the test's: the loopback
    model, the test Redis, loopback hosts and free ports (``extra``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env |= exports(page)
    env |= {
        "NEKOFLOW_LLM_BASE_URL": llm.base_url,
        "NEKOFLOW_BROKER_URL": REDIS_URL,
        "NEKOFLOW_REDIS_URL": REDIS_URL,
        "NEKOFLOW_RESULT_BACKEND": REDIS_URL,
        "NEKOFLOW_REDIS_PREFIX": f"nfqs{XDIST_WORKER}",
        "NEKOFLOW_ONEBOT_WS_HOST": "127.0.0.1",
        "NEKOFLOW_RUNTIME_CONFIG_PATH": str(REPO / "examples" / "config.ini"),
        "NEKOFLOW_SWEEP_INTERVAL_SECONDS": "5",  # doctor's beat line sooner
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
        **extra,
    }
    return env


def answer(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any], dict[str, str], float]:
    """The loopback model's reply to every request."""
    return 200, completion("【开心】欢迎光临~"), {}, 0.0


@pytest.mark.slow
def test_napcat_quick_start_reaches_a_first_reply(quickstart_dir: Path) -> None:
    """Every command of the English NapCat quick start (the Chinese one gives the same, see
    above), with only the addresses pointed at the loopback servers and the test Redis."""
    page = DOCS / "en" / "quickstart" / "napcat.md"
    port = _free_port()

    with FakeLLM(answer) as llm:
        env = reader_env(page, llm, NEKOFLOW_ONEBOT_WS_PORT=str(port))
        procs = Processes(quickstart_dir, env)
        url = f"ws://127.0.0.1:{port}/onebot/v11/ws"
        bot, token = env["NEKOFLOW_ONEBOT_SELF_ID"], env["NEKOFLOW_ONEBOT_ACCESS_TOKEN"]
        napcat: FakeNapCat | None = None

        def run(command: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["bash", "-c", command],
                cwd=quickstart_dir,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )

        def connect() -> FakeNapCat:  # step 5: NapCat connects with the token
            if napcat is not None:
                return napcat
            fake = FakeNapCat(url, bot, token)
            assert fake.wait_connected(), procs.logs()
            return fake

        try:
            for block in blocks(page):
                if block.kind == "run" and "pip install" in block.text:
                    continue  # the install: this test runs in that installed environment
                if block.kind == "background":
                    (command,) = block.commands
                    procs.start(command, block.attrs.get("wait"))
                elif block.kind == "doctor":
                    napcat = connect()
                    (command,) = block.commands
                    # beat's line turns ✓ once the sweeper has run (one sweep interval)
                    deadline = time.monotonic() + 90
                    while (done := run(command)).returncode != 0:
                        assert time.monotonic() < deadline, done.stdout + done.stderr
                        time.sleep(1)
                    assert "✓" in done.stdout
                elif block.kind == "run" and "nekoflow runs" in block.text:
                    napcat = connect()
                    napcat.send_event(private_event(7001, "你好呀", self_id=bot))
                    deadline = time.monotonic() + 120
                    while not napcat.texts("7001"):
                        assert time.monotonic() < deadline, procs.logs()
                        time.sleep(0.2)
                    assert "欢迎光临" in "".join(napcat.texts("7001"))
                    (command,) = block.commands
                    deadline = time.monotonic() + 60
                    while "sent" not in (done := run(command)).stdout:
                        assert done.returncode == 0, done.stderr
                        assert time.monotonic() < deadline, done.stdout + procs.logs()
                        time.sleep(0.5)
                elif block.kind == "run":
                    for command in block.commands:
                        done = run(command)
                        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
            assert napcat is not None and napcat.texts("7001")
            assert (quickstart_dir / "nekoflow.db").exists()  # the default: the current folder
        finally:
            if napcat is not None:
                napcat.close()
            procs.stop()


@pytest.mark.slow
def test_web_quick_start_reaches_a_first_reply(quickstart_dir: Path) -> None:
    """Every command of the English Web-only quick start: the card, the API, workers and beat as
    real processes, doctor, then the documented curl gets the model's reply."""
    page = DOCS / "en" / "quickstart" / "web.md"
    port = str(_free_port())
    with FakeLLM(answer) as llm:
        env = reader_env(page, llm)
        procs = Processes(quickstart_dir, env)

        def run(command: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["bash", "-c", command.replace("8000", port)],  # a free port for the API
                cwd=quickstart_dir,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )

        replied = False
        try:
            for block in blocks(page):
                if block.kind == "run" and "pip install" in block.text:
                    continue
                if block.kind == "background":
                    (command,) = block.commands
                    procs.start(command.replace("8000", port), block.attrs.get("wait"))
                elif block.kind == "doctor":
                    deadline = time.monotonic() + 90
                    while (done := run(block.commands[0])).returncode != 0:
                        assert time.monotonic() < deadline, done.stdout + done.stderr
                        time.sleep(1)
                elif block.kind == "run":
                    for command in block.commands:
                        done = run(command)
                        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
                        if command.startswith("curl"):
                            assert "欢迎光临" in json.dumps(
                                json.loads(done.stdout), ensure_ascii=False
                            )
                            replied = True
                        if "nekoflow runs" in command:
                            assert "done" in done.stdout, done.stdout
            assert replied
        finally:
            procs.stop()
