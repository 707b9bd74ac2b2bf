"""Benchmark: time to first token at a Web SSE client vs the model's own time to first token.

One run starts its own redis-server, a PostgreSQL database of its own (a schema in the test
database), a streaming OpenAI-compatible loopback model in this process (``--first-token`` s
before the first piece, then ``--chunk-chars`` characters every ``--chunk-delay`` s), the
recommended workers (``turns`` on prefork, one process per core; ``llm`` on threads) and the
HTTP API under uvicorn. Then, one turn at a time: ``POST /api/turns``, ``GET
/api/turns/{id}/events`` read with a plain HTTP client, and the times of

- the model receiving the request and writing its first piece (the model's own TTFT),
- the first ``token`` event at the client, and the final ``done`` event.

Printed: p50/p99 of the model's TTFT, the client's TTFT measured from the same moment, their
difference (what streaming adds: worker parse → PUBLISH → Redis → API → SSE → client; target
≤ 30 ms p50) and ratio, plus what comes before the model (POST → model request: the pipeline's
dispatch and prompt stages) and the time to the whole reply for comparison.

    python bench/bench_stream.py                       # 40 turns, 0.5 s first token
    python bench/bench_stream.py --turns 100 --first-token 1.0 --chunk-delay 0.03
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PG_URL = os.environ.get("NEKOFLOW_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
TOKEN = "bench-token-0123456789"
REPLY = (
    "【开心】欢迎回来喵,今天也想听你说说海边的事。<お帰りなさい>(摇了摇尾巴)"
    "【好奇】刚才的浪是不是很大?我在店里都听见海鸥在叫呢。(歪头)"
    "【温柔】先坐下喝杯热可可吧,慢慢讲给我听。"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


# --- the streaming model ------------------------------------------------------------------


class Model:
    """A streaming chat-completions server; records (request received, first piece sent)."""

    def __init__(self, first_token: float, chunk_chars: int, chunk_delay: float) -> None:
        self.times: list[tuple[float, float]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                received = time.monotonic()
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                time.sleep(first_token)
                if not body.get("stream"):
                    raise RuntimeError("the benchmark expects streamed calls")
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                first = 0.0
                for i in range(0, len(REPLY), chunk_chars):
                    if i:
                        time.sleep(chunk_delay)
                    self._event({"delta": {"content": REPLY[i : i + chunk_chars]}})
                    first = first or time.monotonic()
                self._event({"delta": {}, "finish_reason": "stop"})
                usage = {"prompt_tokens": 420, "completion_tokens": 60, "total_tokens": 480}
                self._send(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n")
                self._send("data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
                outer.times.append((received, first))

            def _event(self, choice: dict[str, Any]) -> None:
                chunk = {"model": "bench-model", "choices": [{"index": 0, **choice}]}
                self._send(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n")

            def _send(self, text: str) -> None:
                data = text.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a worker closing its keep-alive connection at shutdown

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


# --- services ------------------------------------------------------------------------------


def start_redis() -> tuple[str, subprocess.Popen]:
    import redis

    port = free_port()
    proc = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"redis://127.0.0.1:{port}/0"
    for _ in range(100):
        try:
            redis.Redis.from_url(url).ping()
            return url, proc
        except redis.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError("redis-server did not start")


def make_database(schema: str) -> str:
    from sqlalchemy import text
    from sqlmodel import Session

    from nekoflow.storage import create_all, make_engine
    from nekoflow.storage.dialogue import Role

    admin = make_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    admin.dispose()
    sep = "&" if "?" in PG_URL else "?"
    url = f"{PG_URL}{sep}options=-csearch_path%3D{schema}"
    engine = make_engine(url)
    create_all(engine)
    with Session(engine) as s:
        s.add(Role.new("钦灵", profile_prompt="你叫钦灵,是海边猫咖里的猫娘店员。"))
        s.commit()
    engine.dispose()
    return url


def drop_database(schema: str) -> None:
    from sqlalchemy import text

    from nekoflow.storage import make_engine

    admin = make_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    admin.dispose()


def spawn(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip


def wait_for(what: str, ready: Any, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if ready():
            return
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not start:\n{log.read_text(errors='replace')[-3000:]}")


def api_up(port: int) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except OSError:
        return False


# --- the client ----------------------------------------------------------------------------


def one_turn(port: int, session: str) -> tuple[float, float | None, float | None, str, int]:
    """POST a Web turn and read its SSE: (posted, first token, done, concatenated text, token
    events)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    event = {"session_id": session, "message": "我回来啦,今天去海边了", "user_id": session}
    posted = time.monotonic()
    conn.request(
        "POST",
        "/api/turns",
        body=json.dumps({"channel": "web", "event": event}),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    body = json.loads(response.read())
    if response.status != 202:
        raise RuntimeError(f"POST /api/turns answered {response.status}: {body}")
    conn.request("GET", f"/api/turns/{body['turn_id']}/events?timeout=60")
    stream = conn.getresponse()
    first: float | None = None
    done: float | None = None
    name, parts, pieces = "", [], 0
    while True:
        line = stream.readline()
        if not line:
            break
        line = line.decode().rstrip("\r\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            if name == "token":
                first = first or time.monotonic()
                pieces += 1
                parts.append(json.loads(line[6:])["text"])
            elif name == "reset":
                parts.clear()
            elif name in ("done", "failed", "skipped", "timeout"):
                done = time.monotonic() if name == "done" else None
                break
    conn.close()
    return posted, first, done, "".join(parts), pieces


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--turns", type=int, default=40)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--first-token", type=float, default=0.5, help="model's TTFT, seconds")
    p.add_argument("--chunk-chars", type=int, default=4)
    p.add_argument("--chunk-delay", type=float, default=0.02, help="seconds between pieces")
    p.add_argument("--llm-threads", type=int, default=16)
    args = p.parse_args()

    model = Model(args.first_token, args.chunk_chars, args.chunk_delay)
    redis_url, redis_proc = start_redis()
    schema = f"bench_stream_{uuid.uuid4().hex[:8]}"
    db_url = make_database(schema)
    tmp = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    api_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env.update(
        NEKOFLOW_DATABASE_URL=db_url,
        NEKOFLOW_REDIS_URL=redis_url,
        NEKOFLOW_BROKER_URL=redis_url,
        NEKOFLOW_RESULT_BACKEND=redis_url,
        NEKOFLOW_LLM_PROVIDER="openai",
        NEKOFLOW_LLM_BASE_URL=model.base_url,
        NEKOFLOW_LLM_API_KEY="bench-key",
        NEKOFLOW_LLM_MODEL="bench-model",
        NEKOFLOW_API_TOKEN=TOKEN,
        NEKOFLOW_RUNTIME_CONFIG_PATH=str(tmp / "absent-config.ini"),
        PYTHONPATH=str(REPO),
    )
    celery = [sys.executable, "-m", "celery", "-A", "tasks", "worker", "--without-gossip",
              "--without-mingle", "-E", "-l", "INFO"]  # fmt: skip
    cores = str(os.cpu_count() or 2)
    procs: list[subprocess.Popen] = []
    try:
        for name, extra in (
            ("turns", ["-Q", "turns,outbound", "-c", cores, "-P", "prefork"]),
            ("llm", ["-Q", "llm", "-c", str(args.llm_threads), "-P", "threads"]),
        ):
            log = tmp / f"{name}.log"
            proc = spawn([*celery, *extra, "-n", f"{name}@%h"], env, log)
            procs.append(proc)
            wait_for(f"worker {name}", lambda log=log: "ready." in log.read_text(), proc, log)
        log = tmp / "api.log"
        api_cmd = [sys.executable, "-m", "uvicorn", "nekoflow.api.app:create_app", "--factory",
                   "--port", str(api_port), "--log-level", "warning"]  # fmt: skip
        proc = spawn(api_cmd, env, log)
        procs.append(proc)
        wait_for("API", lambda: api_up(api_port), proc, log)

        rows, pieces = [], []
        for i in range(args.warmup + args.turns):
            posted, first, done, text, n = one_turn(api_port, f"bench-{i}")
            if first is None or done is None or text != REPLY:
                raise RuntimeError(f"turn {i}: no tokens or not done ({text[:20]!r}); see {tmp}")
            if i >= args.warmup:
                received, model_first = model.times[i]
                rows.append((posted, received, model_first, first, done))
                pieces.append(n)
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)
        os.killpg(redis_proc.pid, signal.SIGTERM)
        drop_database(schema)

    ms = 1000.0
    model_ttft = [(m - r) * ms for _, r, m, _, _ in rows]
    client_ttft = [(c - r) * ms for _, r, _, c, _ in rows]
    added = [c - m for c, m in zip(client_ttft, model_ttft, strict=True)]
    before = [(r - p) * ms for p, r, _, _, _ in rows]
    e2e_first = [(c - p) * ms for p, _, _, c, _ in rows]
    e2e_done = [(d - p) * ms for p, _, _, _, d in rows]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        f"{len(rows)} turns one at a time; model: first token after {args.first_token:g} s, "
        f"{len(REPLY)} chars in pieces of {args.chunk_chars} every {args.chunk_delay:g} s; "
        f"workers: turns prefork x{cores}, llm threads x{args.llm_threads}; PostgreSQL, Redis"
    )
    print(f"{'':44}{'p50':>10}{'p99':>10}")
    for label, values in (
        ("model's own TTFT (request → first piece)", model_ttft),
        ("client TTFT (same origin → first token)", client_ttft),
        ("added by streaming (client − model)", added),
        ("before the model (POST → model request)", before),
        ("client TTFT from POST", e2e_first),
        ("whole reply at the client (POST → done)", e2e_done),
    ):
        print(f"{label:44}{statistics.median(values):>8.1f}ms{pct(values, 0.99):>8.1f}ms")
    chunks = -(-len(REPLY) // args.chunk_chars)
    print(
        f"token events (= token PUBLISHes) per turn: p50 {statistics.median(pieces):g} "
        f"for the model's {chunks} pieces (NEKOFLOW_LLM_STREAM_FLUSH_MS=50 coalescing)"
    )
    ratio = statistics.median(client_ttft) / statistics.median(model_ttft)
    target = statistics.median(added) <= 30.0
    print(
        f"client/model TTFT p50 ratio: {ratio:.3f}; added p50 {statistics.median(added):.1f} ms "
        f"(target ≤ 30 ms: {'met' if target else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
