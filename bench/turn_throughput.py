"""Benchmark: full turns through the six-stage chain vs a bare chain of six no-op tasks.

Both run in one run on the same real worker (prefork, same concurrency), the same Redis broker
and result backend, and the same queues and routing; the turns use PostgreSQL and the scripted
model (zero latency). Prints turns/s of each and the ratio, and the isolated (one at a time)
latency p50/p99 of each.

    python bench/turn_throughput.py                      # 600 turns over 60 scopes, 2 processes
    python bench/turn_throughput.py --turns 2000 --scopes 200 --isolated 100
    python bench/turn_throughput.py --pg-url postgresql://postgres@127.0.0.1:5432/test

Targets: throughput ratio >= 0.8, isolated p50 within 1.5x of the bare chain.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/11"
SCHEMA = "bench_turns"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--turns", type=int, default=600, help="turns (and bare chains) to run")
    p.add_argument("--scopes", type=int, default=60, help="scopes the turns are spread over")
    p.add_argument("--isolated", type=int, default=50, help="one-at-a-time samples for latency")
    p.add_argument("--concurrency", type=int, default=2, help="worker processes (prefork)")
    p.add_argument("--pg-url", default=os.environ.get("NEKOFLOW_BENCH_PG_URL", DEFAULT_PG_URL))
    p.add_argument("--redis-url", default=DEFAULT_REDIS_URL, help="broker (flushed!)")
    return p.parse_args()


def configure(args: argparse.Namespace) -> str:
    """Point nekoflow (this process and the worker) at the benchmark schema and broker."""
    sep = "&" if "?" in args.pg_url else "?"
    db_url = f"{args.pg_url}{sep}options=-csearch_path%3D{SCHEMA}"
    os.environ.update(
        NEKOFLOW_DATABASE_URL=db_url,
        NEKOFLOW_REDIS_URL=args.redis_url,
        NEKOFLOW_BROKER_URL=args.redis_url,
        NEKOFLOW_RESULT_BACKEND=args.redis_url,
        NEKOFLOW_LLM_PROVIDER="scripted",
        NEKOFLOW_EVENT_BUS="redis",  # turn.finished tells the benchmark a turn ended
    )
    return db_url


def reset_database(pg_url: str, db_url: str) -> None:
    from sqlalchemy import text
    from sqlmodel import Session

    from nekoflow.storage import create_all, make_engine
    from nekoflow.storage.dialogue import Role

    admin = make_engine(pg_url)
    with admin.begin() as conn:
        conn.execute(text(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))
        conn.execute(text(f"CREATE SCHEMA {SCHEMA}"))
    admin.dispose()
    engine = make_engine(db_url)
    create_all(engine)
    with Session(engine) as s:
        s.add(Role.new("钦灵", profile_prompt="你叫钦灵,是海边猫咖里的猫娘店员。"))
        s.commit()
    engine.dispose()


def start_worker(concurrency: int, log: Path) -> subprocess.Popen:
    cmd = [
        sys.executable, "-m", "celery", "-A", "bench.turn_bench_app", "worker",
        "-Q", "turns,llm", "-c", str(concurrency), "-P", "prefork",
        "--without-gossip", "--without-mingle", "-E", "-l", "INFO", "-n", "bench@%h",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while "ready." not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"worker did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)
    return proc


def stop_worker(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Bare:
    """Runs bare six-task chains and waits for them (the last task pushes to a Redis list)."""

    def __init__(self, redis_url: str) -> None:
        import redis

        from bench.turn_bench_app import COUNTER_KEY, bare_chain

        self.r = redis.Redis.from_url(redis_url, socket_timeout=300)  # BLPOPs wait long
        self.key = COUNTER_KEY
        self.chain = bare_chain

    def throughput(self, n: int, scopes: int) -> float:
        self.r.delete(self.key)
        start = time.perf_counter()
        for i in range(n):
            self.chain(uuid.uuid4().hex, f"bare:{i % scopes}").apply_async()
        while self.r.llen(self.key) < n:
            time.sleep(0.02)
        return n / (time.perf_counter() - start)

    def isolated(self, k: int) -> list[float]:
        out = []
        for _ in range(k):
            self.r.delete(self.key)
            start = time.perf_counter()
            self.chain(uuid.uuid4().hex, "bare:iso").apply_async()
            self.r.blpop([self.key], timeout=30)
            out.append((time.perf_counter() - start) * 1000)
        return out


class Turns:
    """Enqueues real turns through ``tasks.enqueue_turn`` and waits for them in the database."""

    def __init__(self) -> None:
        from sqlalchemy import func
        from sqlmodel import select

        from nekoflow.storage.turns import TurnRun
        from tasks import enqueue_turn
        from tasks.runtime import get_deps

        self.enqueue = enqueue_turn
        self.engine = get_deps().engine
        self.done_count = select(func.count()).where(TurnRun.status.in_(["done", "failed"]))  # type: ignore[attr-defined]
        self.n = 0

    def _event(self, session: str) -> dict:
        self.n += 1
        return {
            "session_id": session,
            "user_id": f"u-{session}",
            "message": f"第{self.n}句:谢谢你陪我聊天,今天的海风好舒服",
            "message_id": uuid.uuid4().hex,
        }

    def _scalar(self, stmt) -> object:
        with self.engine.connect() as conn:
            return conn.execute(stmt).scalar()

    def throughput(self, n: int, scopes: int, tag: str) -> tuple[float, int]:
        before = int(self._scalar(self.done_count))  # type: ignore[arg-type]
        start = time.perf_counter()
        for i in range(n):
            self.enqueue("web", self._event(f"{tag}-{i % scopes}"))
        while int(self._scalar(self.done_count)) < before + n:  # type: ignore[arg-type]
            time.sleep(0.02)
        elapsed = time.perf_counter() - start
        with self.engine.connect() as conn:
            from sqlalchemy import text

            failed = conn.execute(text("SELECT count(*) FROM turn_run WHERE status='failed'"))
            return n / elapsed, int(failed.scalar() or 0)

    def isolated(self, k: int) -> list[float]:
        """Latency from enqueue to the worker's ``turn.finished`` event (no polling)."""
        import redis

        from nekoflow.events_redis import RedisEventBus
        from nekoflow.settings import get_settings

        settings = get_settings()
        bus = RedisEventBus(redis.Redis.from_url(settings.redis_url), prefix=settings.redis_prefix)
        out = []
        with bus.subscribe("turn.finished") as events:
            for i in range(k):
                start = time.perf_counter()
                handle = self.enqueue("web", self._event(f"iso-{i}"))
                while (event := events.get(timeout=30)) is not None:
                    if event.payload.get("turn_id") == handle.turn_id:
                        break
                else:
                    raise RuntimeError(f"turn {handle.turn_id} did not finish")
                out.append((time.perf_counter() - start) * 1000)
        return out


def main() -> None:
    args = parse_args()
    db_url = configure(args)
    sys.path.insert(0, str(REPO))
    import redis

    redis.Redis.from_url(args.redis_url).flushdb()
    reset_database(args.pg_url, db_url)
    with tempfile.TemporaryDirectory() as tmp:
        worker = start_worker(args.concurrency, Path(tmp) / "worker.log")
        try:
            bare, turns = Bare(args.redis_url), Turns()
            bare.throughput(20, 5)  # warm-up: imports, connections, prefork children
            turns.throughput(20, 5, "warm")
            bare_tps = bare.throughput(args.turns, args.scopes)
            turn_tps, failed = turns.throughput(args.turns, args.scopes, "run")
            bare_lat = bare.isolated(args.isolated)
            turn_lat = turns.isolated(args.isolated)
        finally:
            stop_worker(worker)
    cpu = platform.processor() or platform.machine()
    print(f"machine: {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}")
    print(
        f"worker: prefork -c {args.concurrency}; broker {args.redis_url}; PostgreSQL; "
        f"{args.turns} turns over {args.scopes} scopes; {args.isolated} isolated samples"
    )
    print(f"bare chain (6 no-op tasks): {bare_tps:8.1f} chains/s")
    print(f"full turn (6 stages)     : {turn_tps:8.1f} turns/s   ({failed} failed)")
    print(f"throughput ratio turn/bare: {turn_tps / bare_tps:.2f}   (target >= 0.8)")
    for name, lat in (("bare chain", bare_lat), ("full turn ", turn_lat)):
        print(
            f"isolated {name}: p50 {statistics.median(lat):7.1f} ms   "
            f"p99 {percentile(lat, 0.99):7.1f} ms"
        )
    ratio = statistics.median(turn_lat) / statistics.median(bare_lat)
    print(f"isolated p50 ratio turn/bare: {ratio:.2f}   (target <= 1.5)")


if __name__ == "__main__":
    main()
