"""Helpers for tests of gateway processes: a private throwaway redis-server (which a test may
stop, start again empty or flush without touching the shared Redis), a gateway command run as
a real process with its output in a file, and the environment such a process gets."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import redis

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(
    predicate: Callable[[], bool], timeout: float, what: str, logs: Callable[[], str]
) -> None:
    """Poll ``predicate`` until true; fail with ``logs()`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}\n{logs()}")


class PrivateRedis:
    """``redis-server`` on a free loopback port with nothing on disk (``--save ''
    --appendonly no``): stopping and starting it again is Redis restarting without its data."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:{port}/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server (empty) and wait until it answers PING."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        try:
            wait_until(self._pings(client), 10, "the private redis-server", lambda: "")
        finally:
            client.close()

    def _pings(self, client: redis.Redis) -> Callable[[], bool]:
        def ping() -> bool:
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        return ping

    def stop(self) -> None:
        """Stop the server (SIGKILL: nothing saved, like a crash)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def client(self) -> redis.Redis:
        """A client of database 0."""
        return redis.Redis(port=self.port, socket_connect_timeout=1, socket_timeout=5)


def gateway_env(database_url: str, redis_url: str, **extra: str) -> dict[str, str]:
    """The environment of a gateway process: this one's without NEKOFLOW_* plus the given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env.update(
        NEKOFLOW_DATABASE_URL=database_url,
        NEKOFLOW_REDIS_URL=redis_url,
        NEKOFLOW_REDIS_PREFIX="nfgw",
        PYTHONPATH=str(REPO),
        COLUMNS="200",
    )
    env.update(extra)
    return env


class GatewayProc:
    """``nekoflow gateway <platform> [args]`` as a real process, stdout and stderr in a file."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.args = args
        self.env = env
        self.log = log
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        """Start it (its output file emptied)."""
        self.log.write_text("")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nekoflow", "gateway", *self.args],
            cwd=REPO,
            env=self.env,
            stdout=self.log.open("a"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_for_output(self, text: str, timeout: float = 30) -> None:
        """Wait until ``text`` appears in the output (fails if the process ends first)."""

        def seen() -> bool:
            if text in self.output():
                return True
            assert self.proc is not None and self.proc.poll() is None, self.output()
            return False

        wait_until(seen, timeout, repr(text), self.output)

    def output(self) -> str:
        """Everything it printed so far."""
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL its process group."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
