"""Benchmark: turns under a model with real latency, per deployment, against two yardsticks.

One run measures, for each worker layout (``basic``: one prefork worker on ``turns,llm``;
``recommended``: ``turns`` on prefork with one process per core + ``llm`` on a thread pool),
the turn against the **bare** chain (six no-op tasks whose ``llm_call`` sleeps the same latency
on the same pool, same broker, serializer, acks, task events: what Celery costs — the issue's
yardstick) and the **stored** chain (the bare chain plus, in each stage, the least a stage that
keeps its state in SQL does: read the turn, store a result, commit; see
``bench/turn_bench_app.py``):

- turns/s and chains/s, and the ratios;
- worker CPU per turn / per chain (utime+stime from /proc of every worker process);
- Redis commands per turn / chain (``INFO stats`` of a redis-server the benchmark starts for
  itself, so nothing else is counted) and SQL transactions per turn (``pg_stat_database`` of a
  database the benchmark owns);
- overhead beyond the model, one at a time: p50/p99 of (enqueue → finished) − latency;
- peak memory (VmHWM) of each worker process tree.

    python bench/turn_deployment.py                          # 1 s model, 400 turns, 200 scopes
    python bench/turn_deployment.py --latency 0 --turns 600  # zero-latency model
    python bench/turn_deployment.py --layouts recommended --llm-threads 64
    python bench/turn_deployment.py --layouts recommended --rounds 5   # median of 5 ratios

Targets (issue 16): throughput ≥ 0.8× bare; CPU/turn ≤ 1.5× bare; Redis ≤ bare + 15;
SQL transactions ≤ 8 per turn; isolated overhead p50 ≤ 1.5× bare; llm worker ≤ 200 MiB.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PG_ADMIN = os.environ.get("NEKOFLOW_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
DB_NAME = "nekoflow_bench"
CLK = os.sysconf("SC_CLK_TCK")
STORED_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS bench_turn (turn_id varchar(64) PRIMARY KEY, scope_id text,"
    " created_at timestamptz NOT NULL DEFAULT now())",
    "CREATE TABLE IF NOT EXISTS bench_stage (turn_id varchar(64) NOT NULL, stage varchar(32)"
    " NOT NULL, result json NOT NULL, created_at timestamptz NOT NULL DEFAULT now(),"
    " PRIMARY KEY (turn_id, stage))",
)
"""The stored chain's tables (``bench/turn_bench_app.py``), in the benchmark's database."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--latency", type=float, default=1.0, help="model latency, seconds")
    p.add_argument("--turns", type=int, default=400)
    p.add_argument("--scopes", type=int, default=200)
    p.add_argument("--isolated", type=int, default=30, help="one-at-a-time samples")
    p.add_argument("--layouts", default="basic,recommended")
    p.add_argument("--turn-procs", type=int, default=os.cpu_count() or 2)
    p.add_argument("--llm-threads", type=int, default=64)
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="throughput rounds, bare and turn alternating on the same workers; the ratio\n"
        "reported is the median of the rounds' (box noise moves one round's ratio by ±0.07)",
    )
    return p.parse_args()


# --- processes ---------------------------------------------------------------------------


def tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / CLK  # utime + stime
    return total


def peak_rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


@dataclass
class Worker:
    """One Celery worker process tree."""

    name: str
    args: list[str]
    proc: subprocess.Popen | None = None
    log: Path | None = None

    def start(self, env: dict[str, str], tmp: Path) -> None:
        self.log = tmp / f"{self.name}.log"
        cmd = [sys.executable, "-m", "celery", "-A", "bench.turn_bench_app", "worker",
               *self.args, "--without-gossip", "--without-mingle", "-E", "-l", "WARNING",
               "-n", f"{self.name}@%h"]  # fmt: skip
        self.proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            env=env,
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def stop(self) -> None:
        if self.proc is None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def pids(self) -> list[int]:
        assert self.proc is not None
        return tree(self.proc.pid)


def layouts(args: argparse.Namespace) -> dict[str, list[Worker]]:
    return {
        "basic": [Worker("all", ["-Q", "turns,llm", "-P", "prefork", "-c", "2"])],
        "recommended": [
            Worker("turns", ["-Q", "turns", "-P", "prefork", "-c", str(args.turn_procs)]),
            Worker("llm", ["-Q", "llm", "-P", "threads", "-c", str(args.llm_threads)]),
        ],
    }


# --- counters ----------------------------------------------------------------------------


@dataclass
class Counters:
    """Redis commands, SQL transactions and worker CPU at one moment."""

    redis: int
    sql: int
    cpu: float
    #: CPU seconds of each worker, of this process (the enqueuer/driver) and of PostgreSQL.
    parts: dict[str, float] = field(default_factory=dict)


@dataclass
class Rig:
    """The benchmark's own Redis, database and the clients it reads counters with."""

    redis_url: str
    db_url: str
    redis_proc: subprocess.Popen
    workers: list[Worker] = field(default_factory=list)

    def counters(self) -> Counters:
        import redis
        from sqlalchemy import text

        from nekoflow.storage import make_engine

        time.sleep(1.2)  # PostgreSQL flushes backend statistics about once a second
        info = redis.Redis.from_url(self.redis_url).info("stats")
        admin = make_engine(PG_ADMIN)
        with admin.connect() as conn:
            conn.execute(text("SELECT pg_stat_clear_snapshot()"))
            row = conn.execute(
                text("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = :d"),
                {"d": DB_NAME},
            ).scalar()
        admin.dispose()
        parts = {w.name: cpu_seconds(w.pids()) for w in self.workers}
        own = os.times()
        parts["driver"] = own.user + own.system
        parts["postgres"] = cpu_seconds(postgres_pids())
        cpu = sum(parts[w.name] for w in self.workers)
        return Counters(int(info["total_commands_processed"]), int(row or 0), cpu, parts)


def postgres_pids() -> list[int]:
    """Every PostgreSQL server process on this machine (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                comm = Path(f"/proc/{entry}/comm").read_text().strip()
            except OSError:
                continue
            if comm.startswith("postgres") or comm.startswith("postmaster"):
                out.append(int(entry))
    return out


def start_redis() -> tuple[str, subprocess.Popen]:
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
    import redis

    for _ in range(100):
        try:
            redis.Redis.from_url(url).ping()
            return url, proc
        except redis.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError("redis-server did not start")


def reset_database() -> str:
    from sqlalchemy import text
    from sqlalchemy.engine import make_url
    from sqlmodel import Session

    from nekoflow.storage import create_all, make_engine
    from nekoflow.storage.dialogue import Role

    admin = make_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)"))
        conn.execute(text(f"CREATE DATABASE {DB_NAME}"))
    admin.dispose()
    url = make_url(PG_ADMIN).set(database=DB_NAME).render_as_string(hide_password=False)
    engine = make_engine(url)
    create_all(engine)
    with engine.begin() as conn:
        for ddl in STORED_SCHEMA:
            conn.execute(text(ddl))
    with Session(engine) as s:
        s.add(Role.new("钦灵", profile_prompt="你叫钦灵,是海边猫咖里的猫娘店员。"))
        s.commit()
    engine.dispose()
    return url


# --- drivers -----------------------------------------------------------------------------


def wait_ready(rig: Rig, names: list[str]) -> None:
    from tasks.app import app

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=1.0) or []
        seen = {name.split("@")[0] for reply in replies for name in reply}
        if set(names) <= seen:
            return
    raise RuntimeError(f"workers {names} did not start")


class Bare:
    """Bare six-task chains; the last task pushes to a Redis list the driver pops."""

    def __init__(self, redis_url: str) -> None:
        import redis

        from bench.turn_bench_app import COUNTER_KEY, bare_chain

        self.r = redis.Redis.from_url(redis_url, socket_timeout=300)  # BLPOPs wait long
        self.key = COUNTER_KEY
        self.start = lambda turn_id, scope: bare_chain(turn_id, scope).apply_async()

    def run(self, n: int, scopes: int) -> tuple[float, int]:
        """chains/s, and the driver's own Redis commands (to subtract)."""
        self.r.delete(self.key)
        start = time.perf_counter()
        for i in range(n):
            self.start(uuid.uuid4().hex, f"bare:{i % scopes}")
        for _ in range(n):
            self.r.blpop([self.key], timeout=120)
        return n / (time.perf_counter() - start), n + 1

    def isolated(self, k: int) -> list[float]:
        out = []
        self.r.delete(self.key)
        for _ in range(k):
            turn_id = uuid.uuid4().hex
            start = time.perf_counter()
            self.start(turn_id, "bare:iso")
            while (got := self.r.blpop([self.key], timeout=60)) is not None:
                if got[1].decode() == turn_id:  # not a straggler of an earlier run
                    break
            out.append(time.perf_counter() - start)
        return out


class Turns:
    """Real turns through ``tasks.enqueue_turn``, awaited on the ``turn.finished`` events."""

    def __init__(self) -> None:
        import redis

        from nekoflow.events_redis import RedisEventBus
        from nekoflow.settings import get_settings
        from tasks import enqueue_turn

        settings = get_settings()
        self.bus = RedisEventBus(
            redis.Redis.from_url(settings.redis_url), prefix=settings.redis_prefix
        )
        self.enqueue = enqueue_turn
        self.n = 0

    def _event(self, scope: str) -> dict:
        self.n += 1
        return {
            "session_id": scope,
            "user_id": f"u-{scope}",
            "message": f"第{self.n}句:谢谢你陪我聊天,今天的海风好舒服",
            "message_id": uuid.uuid4().hex,
        }

    def run(self, n: int, scopes: int, tag: str) -> tuple[float, int]:
        """turns/s and how many failed."""
        failed = 0
        with self.bus.subscribe("turn.finished") as events:
            start = time.perf_counter()
            ids = {
                self.enqueue("web", self._event(f"{tag}-{i % scopes}")).turn_id for i in range(n)
            }
            while ids:
                event = events.get(timeout=120)
                if event is None:
                    raise RuntimeError(f"{len(ids)} turns did not finish")
                if event.payload.get("turn_id") in ids:
                    ids.discard(event.payload["turn_id"])
                    failed += event.payload.get("status") != "done"
            return n / (time.perf_counter() - start), failed

    def isolated(self, k: int) -> list[float]:
        out = []
        with self.bus.subscribe("turn.finished") as events:
            for i in range(k):
                start = time.perf_counter()
                turn_id = self.enqueue(
                    "web", self._event(f"iso-{uuid.uuid4().hex[:6]}-{i}")
                ).turn_id
                while (event := events.get(timeout=60)) is not None:
                    if event.payload.get("turn_id") == turn_id:
                        break
                else:
                    raise RuntimeError(f"turn {turn_id} did not finish")
                out.append(time.perf_counter() - start)
        return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Stored(Bare):
    """Stored six-task chains (each stage reads the turn and stores its result in SQL)."""

    def __init__(self, redis_url: str) -> None:
        from bench.turn_bench_app import STORED_KEY, start_stored

        super().__init__(redis_url)
        self.key, self.start = STORED_KEY, start_stored


def measure(rig: Rig, args: argparse.Namespace, workers: list[Worker], tmp: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for w in workers:
        w.start(env, tmp)
    rig.workers = workers
    try:
        wait_ready(rig, [w.name for w in workers])
        bare, stored, turns = Bare(rig.redis_url), Stored(rig.redis_url), Turns()
        bare.run(10, 5)  # warm-up: imports, connections, every prefork child
        stored.run(10, 5)
        turns.run(10, 5, f"warm-{uuid.uuid4().hex[:4]}")
        c0 = rig.counters()
        bare_tps, own = bare.run(args.turns, args.scopes)
        c1 = rig.counters()
        turn_tps, failed = turns.run(args.turns, args.scopes, f"run-{uuid.uuid4().hex[:4]}")
        c2 = rig.counters()
        stored_tps, stored_own = stored.run(args.turns, args.scopes)
        c3 = rig.counters()
        pairs = [(bare_tps, turn_tps)]
        for _ in range(args.rounds - 1):  # throughput only: bare, then turn, on the same workers
            again = bare.run(args.turns, args.scopes)[0]
            tag = f"r-{uuid.uuid4().hex[:4]}"
            pairs.append((again, turns.run(args.turns, args.scopes, tag)[0]))
        bare_iso = [t - args.latency for t in bare.isolated(args.isolated)]
        stored_iso = [t - args.latency for t in stored.isolated(args.isolated)]
        turn_iso = [t - args.latency for t in turns.isolated(args.isolated)]
        rss = {w.name: peak_rss_mib(w.pids()) for w in workers}
    except Exception:
        for w in workers:
            tail = w.log.read_text(errors="replace")[-3000:] if w.log else ""
            print(f"--- worker {w.name} log tail:\n{tail}", file=sys.stderr)
        raise
    finally:
        for w in workers:
            w.stop()
    n = args.turns
    return {
        "bare_tps": statistics.median(b for b, _ in pairs),
        "turn_tps": statistics.median(t for _, t in pairs),
        "pairs": pairs,
        "stored_tps": stored_tps,
        "failed": failed,
        "bare_cpu": (c1.cpu - c0.cpu) / n * 1000,
        "turn_cpu": (c2.cpu - c1.cpu) / n * 1000,
        "stored_cpu": (c3.cpu - c2.cpu) / n * 1000,
        # the driver's BLPOPs/DEL and the counters' INFO calls are not the chain's
        "bare_redis": (c1.redis - c0.redis - own - 1) / n,
        "turn_redis": (c2.redis - c1.redis - 1 - 2) / n,
        "stored_redis": (c3.redis - c2.redis - stored_own - 1) / n,
        "bare_sql": (c1.sql - c0.sql) / n,
        "turn_sql": (c2.sql - c1.sql) / n,
        "stored_sql": (c3.sql - c2.sql) / n,
        "bare_parts": {k: (c1.parts[k] - c0.parts[k]) / n * 1000 for k in c0.parts},
        "turn_parts": {k: (c2.parts[k] - c1.parts[k]) / n * 1000 for k in c0.parts},
        "stored_parts": {k: (c3.parts[k] - c2.parts[k]) / n * 1000 for k in c0.parts},
        "bare_iso": bare_iso,
        "turn_iso": turn_iso,
        "stored_iso": stored_iso,
        "rss": rss,
    }


def report(name: str, args: argparse.Namespace, m: dict) -> None:
    def ms(v: float) -> str:
        return f"{v * 1000:6.1f} ms"

    def ratios(kind: str, target: str) -> str:
        turn, bare, stored = (max(m[f"{k}_{kind}"], 1e-9) for k in ("turn", "bare", "stored"))
        return f"turn/bare {turn / bare:.2f} ({target})   turn/stored {turn / stored:.2f}"

    print(f"\n== {name}: " + "; ".join(" ".join(w.args) for w in layouts(args)[name]))
    print("              bare chain   stored chain           turn")
    print(
        f"throughput {m['bare_tps']:8.2f}/s    {m['stored_tps']:8.2f}/s    {m['turn_tps']:8.2f}/s"
        f"   {ratios('tps', 'target >= 0.8')}   failed {m['failed']}"
    )
    print(
        f"worker CPU {m['bare_cpu']:8.1f} ms  {m['stored_cpu']:8.1f} ms  {m['turn_cpu']:8.1f} ms"
        f"   {ratios('cpu', 'target <= 1.5')}"
    )
    if len(m["pairs"]) > 1:
        each = ", ".join(f"{t / b:.2f}" for b, t in m["pairs"])
        median = statistics.median(t / b for b, t in m["pairs"])
        print(f"  rounds (bare and turn alternating): turn/bare {each}; median {median:.2f}")
    for kind in ("bare", "stored", "turn"):
        parts = "   ".join(f"{k} {v:5.1f}" for k, v in m[f"{kind}_parts"].items())
        print(f"  CPU ms per {kind:6}: {parts}")
    print(
        f"redis cmds {m['bare_redis']:8.1f}     {m['stored_redis']:8.1f}     {m['turn_redis']:8.1f}"
        f"      turn - bare {m['turn_redis'] - m['bare_redis']:+.1f} (target <= +15)"
    )
    print(
        f"SQL xacts  {m['bare_sql']:8.1f}     {m['stored_sql']:8.1f}     {m['turn_sql']:8.1f}"
        "      (target <= 8)"
    )
    for k in ("bare", "stored", "turn"):
        m[f"{k}_p50"] = statistics.median(m[f"{k}_iso"])
    print(
        "overhead p50 "
        + "   ".join(f"{ms(m[f'{k}_p50'])}" for k in ("bare", "stored", "turn"))
        + f"   {ratios('p50', 'target <= 1.5')}"
    )
    print(
        "overhead p99 "
        + "   ".join(f"{ms(pct(m[f'{k}_iso'], 0.99))}" for k in ("bare", "stored", "turn"))
    )
    print("peak memory " + "   ".join(f"{k} {v:6.0f} MiB" for k, v in m["rss"].items()))


def main() -> None:
    args = parse_args()
    redis_url, redis_proc = start_redis()
    try:
        os.environ.update(
            NEKOFLOW_REDIS_URL=redis_url,
            NEKOFLOW_BROKER_URL=redis_url,
            NEKOFLOW_RESULT_BACKEND=redis_url,
            NEKOFLOW_EVENT_BUS="redis",
            NEKOFLOW_BENCH_LLM_LATENCY=str(args.latency),
        )
        llm = None
        if args.latency > 0:
            port = free_port()
            llm = subprocess.Popen(
                [
                    sys.executable,
                    str(REPO / "bench" / "llm_loopback.py"),
                    "--port",
                    str(port),
                    "--latency",
                    str(args.latency),
                ],
                start_new_session=True,
            )
            os.environ.update(
                NEKOFLOW_LLM_PROVIDER="openai",
                NEKOFLOW_LLM_BASE_URL=f"http://127.0.0.1:{port}/v1",
                NEKOFLOW_LLM_API_KEY="bench-key",
                NEKOFLOW_LLM_MODEL="bench-model",
            )
        else:
            os.environ["NEKOFLOW_LLM_PROVIDER"] = "scripted"
        print(f"machine: {os.cpu_count()} cores, {platform.machine()}, "
              f"Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}")  # fmt: skip
        print(f"model latency {args.latency:g} s; {args.turns} turns over {args.scopes} scopes; "
              f"{args.isolated} isolated samples; task events on (-E)")  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            for name in args.layouts.split(","):
                if "tasks.runtime" in sys.modules:  # the last layout's pooled connections
                    sys.modules["tasks.runtime"].get_deps().engine.dispose()
                if "bench.turn_bench_app" in sys.modules:  # the stored chain's driver's too
                    sys.modules["bench.turn_bench_app"].close_pool()
                os.environ["NEKOFLOW_DATABASE_URL"] = reset_database()
                import redis

                redis.Redis.from_url(redis_url).flushdb()
                rig = Rig(redis_url, os.environ["NEKOFLOW_DATABASE_URL"], redis_proc)
                report(name, args, measure(rig, args, layouts(args)[name], Path(tmp)))
        if llm is not None:
            llm.terminate()
    finally:
        os.killpg(redis_proc.pid, signal.SIGTERM)


if __name__ == "__main__":
    main()
