"""Benchmark: bulk re-review throughput on PostgreSQL with real Celery workers.

Generates ``--saves`` × ``--turns`` synthetic historical turns (a user line and a reply line
each) with COPY into a dedicated schema, then re-reviews them in rule mode through real
``celery -A tasks worker -Q review -c 1`` processes and compares with the straightforward
approach (one turn at a time: load, review, insert, commit) on a ``--baseline`` sample.

    python bench/rereview_throughput.py                          # 1,000 × 1,000 = 1M turns
    python bench/rereview_throughput.py --saves 100 --turns 500  # quick

Target: >= 5,000 turns/s end to end and >= 10x the straightforward approach; flat worker RSS.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SENTENCES = [
    "你好呀,今天过得怎么样",
    "谢谢你一直陪着我,我相信你",
    "我好喜欢你",
    "今天好无聊,烦死了",
    "我们来约定一件事吧,明天一起去看海,好不好?我已经想了很久很久了,真的很期待和你一起出发",
    "嗯",
    "晚安,明天见",
    "你在做什么呢?",
]
REPLIES = ["喵~我在这里哦", "好暖呀,我也很开心", "嗯嗯,我明白了", "(歪头)怎么啦?"]


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--saves", type=int, default=1000)
    p.add_argument("--turns", type=int, default=1000, help="turns per save")
    p.add_argument("--baseline", type=int, default=2000, help="turns for the serial baseline")
    p.add_argument("--workers", type=int, default=2, help="worker processes (-c 1 each)")
    p.add_argument("--batch-size", type=int, default=4000)
    p.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/test")
    p.add_argument("--redis-url", default="redis://127.0.0.1:6379/13")
    p.add_argument("--schema", default="rereview_bench")
    p.add_argument("--reuse", action="store_true", help="keep existing data (skip generation)")
    return p.parse_args()


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


def _tree(pid: int) -> list[int]:
    out = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return out
    for c in children:
        out += _tree(int(c))
    return out


def generate(engine: Any, saves: int, turns: int) -> None:
    """Roles, saves and 2 lines per turn, written with COPY (ids explicit), then the leaves."""
    from sqlmodel import SQLModel

    from nekoflow.storage import create_all

    SQLModel.metadata.drop_all(engine)
    create_all(engine)
    t0 = datetime(2023, 1, 1, tzinfo=UTC)
    with engine.begin() as conn:
        raw: Any = conn.connection.driver_connection
        with raw.cursor() as cur:
            with cur.copy(
                "COPY role (id, name, profile_prompt, initial_relationship, created_at) FROM STDIN"
            ) as cp:
                for r in range(1, 11):
                    cp.write_row(
                        [
                            r,
                            f"角色{r}",
                            "",
                            '{"affection": 50, "trust": 50, '
                            '"familiarity": 30, "dependency": 30, "security": 50, '
                            '"jealousy": 0}',
                            t0,
                        ]
                    )
            with cur.copy(
                "COPY save (id, role_id, scope_id, created_at, updated_at) FROM STDIN"
            ) as cp:
                for s in range(1, saves + 1):
                    cp.write_row([s, (s % 10) + 1, f"web:user:u{s}", t0, t0])
            line_id = 0
            with cur.copy(
                "COPY line (id, content, attribute, role_id, display_name, save_id, "
                "parent_line_id, created_at) FROM STDIN"
            ) as cp:
                for s in range(1, saves + 1):
                    parent = None
                    when = t0
                    rid = (s % 10) + 1
                    for t in range(turns):
                        gap = (1800 * 50) if t % 97 == 0 else (60 if t % 7 else 4000)
                        when += timedelta(seconds=gap)
                        line_id += 1
                        cp.write_row(
                            [
                                line_id,
                                SENTENCES[(s + t) % len(SENTENCES)],
                                "user",
                                None,
                                "莱姆",
                                s,
                                parent,
                                when,
                            ]
                        )
                        parent = line_id
                        line_id += 1
                        cp.write_row(
                            [
                                line_id,
                                REPLIES[(s * 3 + t) % len(REPLIES)],
                                "assistant",
                                rid,
                                "钦灵",
                                s,
                                parent,
                                when + timedelta(seconds=3),
                            ]
                        )
                        parent = line_id
            cur.execute(
                "UPDATE save SET last_message_id = m.id, updated_at = m.at FROM "
                "(SELECT save_id, max(id) AS id, max(created_at) AS at FROM line "
                "GROUP BY save_id) m WHERE m.save_id = save.id"
            )
            for table in ("role", "save", "line"):
                cur.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT max(id) FROM {table}))"
                )
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")


def baseline(engine: Any, n: int) -> float:
    """The straightforward approach: per turn load its lines, review, insert one row, commit."""
    from sqlmodel import Session, col, select

    from nekoflow.rereview.core import HistoricalTurn, record_values
    from nekoflow.review import ReviewInput, ReviewPipeline, real_time_context
    from nekoflow.storage.dialogue import Line, Save
    from nekoflow.storage.rereview import ReviewRecord

    pipeline = ReviewPipeline(mode="rule")
    with Session(engine) as s:
        user_ids = s.scalars(
            select(Line.id).where(col(Line.attribute) == "user").order_by(col(Line.id)).limit(n)
        ).all()
    start = time.perf_counter()
    for uid in user_ids:
        with Session(engine) as s:
            user = s.get(Line, uid)
            assert user is not None
            save = s.get(Save, user.save_id)
            assert save is not None
            prev = s.get(Line, user.parent_line_id) if user.parent_line_id else None
            replies = s.scalars(select(Line).where(col(Line.parent_line_id) == uid)).all()
            reply = "".join(r.content for r in replies)
            inp = ReviewInput(
                conversation_id=save.scope_id,
                character_id=str(save.role_id),
                user_message=user.content,
                assistant_message=reply,
                real_time_context=real_time_context(
                    prev.created_at if prev else None, user.created_at
                ).to_dict(),
            )
            out = pipeline.run(inp)
            turn = HistoricalTurn(
                save.id or 0,
                uid,
                save.role_id,
                save.scope_id,
                0,
                None,
                user.content,
                reply,
                user.created_at,
                None,
            )
            s.add(ReviewRecord(**record_values(turn, out, "baseline", 0)))
            s.commit()
    return len(user_ids) / (time.perf_counter() - start)


def main() -> None:
    """Generate, run the baseline sample, run the job on real workers, print the figures."""
    a = _args()
    os.environ["NEKOFLOW_BROKER_URL"] = a.redis_url
    os.environ["NEKOFLOW_RESULT_BACKEND"] = a.redis_url
    from sqlalchemy import text

    from nekoflow.rereview.runner import ReviewerSpec
    from nekoflow.rereview.store import JobFilters, create_job, progress
    from nekoflow.settings import Settings
    from nekoflow.storage import make_engine

    admin = make_engine(a.pg_url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{a.schema}"'))
    admin.dispose()
    sep = "&" if "?" in a.pg_url else "?"
    db_url = f"{a.pg_url}{sep}options=-csearch_path%3D{a.schema}"
    engine = make_engine(db_url)
    total = a.saves * a.turns
    if not a.reuse:
        t = time.perf_counter()
        generate(engine, a.saves, a.turns)
        print(f"generated {total:,} turns ({2 * total:,} lines) in {time.perf_counter() - t:.1f} s")
    with engine.begin() as conn:
        conn.exec_driver_sql("TRUNCATE review_record, review_batch, review_job CASCADE")

    base = baseline(engine, a.baseline)
    print(f"baseline (one turn at a time, {a.baseline:,} turns): {base:,.0f} turns/s")
    with engine.begin() as conn:
        conn.exec_driver_sql("TRUNCATE review_record")

    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env.update(
        NEKOFLOW_DATABASE_URL=db_url,
        NEKOFLOW_REDIS_URL=a.redis_url,
        NEKOFLOW_BROKER_URL=a.redis_url,
        NEKOFLOW_RESULT_BACKEND=a.redis_url,
        PYTHONPATH=str(REPO),
    )
    import redis

    redis.Redis.from_url(a.redis_url).flushdb()
    logs = Path("/tmp") / f"rereview-bench-{os.getpid()}"
    logs.mkdir(exist_ok=True)
    procs = []
    for i in range(a.workers):
        log = (logs / f"w{i}.log").open("w")
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "tasks",
                    "worker",
                    "-Q",
                    "review",
                    "-c",
                    "1",
                    "-P",
                    "prefork",
                    "-n",
                    f"bench{i}@%h",
                    "-l",
                    "INFO",
                    "--without-gossip",
                    "--without-mingle",
                    "-E",
                ],
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    # Publish only once every worker has declared the review queue (and is consuming).
    deadline = time.monotonic() + 60
    for i, p in enumerate(procs):
        while "ready." not in (logs / f"w{i}.log").read_text(errors="replace"):
            if p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker {i} did not start; see {logs / f'w{i}.log'}")
            time.sleep(0.1)
    from tasks.rereview import dispatch

    settings = Settings(database_url=db_url)
    version = ReviewerSpec(mode="rule", settings=settings).version()
    peaks = {p.pid: 0 for p in procs}
    samples: dict[int, list[int]] = {p.pid: [] for p in procs}
    try:
        start = time.perf_counter()
        job = create_job(
            engine, JobFilters(), mode="rule", version=version, batch_size=a.batch_size
        )
        assert job.id is not None
        dispatch(job.id, list(range(job.batches)), "rule")
        while True:
            for p in procs:
                rss = sum(_rss_kb(pid) for pid in _tree(p.pid))
                peaks[p.pid] = max(peaks[p.pid], rss)
                samples[p.pid].append(rss)
            pr = progress(engine, job.id)
            if pr.status != "running" or pr.batches_failed:
                break
            time.sleep(0.5)
        elapsed = time.perf_counter() - start
    finally:
        for p in procs:
            os.killpg(p.pid, 15)
            p.wait(timeout=30)
    assert pr.status == "done", pr
    rate = pr.turns_done / elapsed
    print(
        f"re-review: {pr.turns_done:,} turns in {elapsed:.1f} s end to end "
        f"({a.workers} workers, batches of ~{a.batch_size:,} turns): {rate:,.0f} turns/s"
    )
    print(f"baseline: {base:,.0f} turns/s; ratio: {rate / base:.1f}x")
    for i, p in enumerate(procs):
        s = samples[p.pid]
        quarter = s[len(s) // 4] if s else 0
        print(
            f"worker {i} peak RSS (main + pool child): {peaks[p.pid] / 1024:.0f} MiB "
            f"(at 25%: {quarter / 1024:.0f} MiB, at end: {s[-1] / 1024 if s else 0:.0f} MiB)"
        )


if __name__ == "__main__":
    main()
