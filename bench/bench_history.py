"""Benchmark: a save's active path by one recursive CTE vs the seed's load-all-then-walk.

The dataset is one save of 200,000 lines in a branching tree (regenerated replies and abandoned
branches hang off the active path) whose active path is 2,000 lines long. Both approaches run on
the same database in the same run, on SQLite and on PostgreSQL.

    python bench/bench_history.py            # 200,000 lines, path 2,000
    python bench/bench_history.py --quick    # 20,000 lines, path 500
    python bench/bench_history.py --pg-url postgresql://postgres@127.0.0.1:5432/test
    python bench/bench_history.py --no-pg    # SQLite only

Targets: CTE <= 30 ms on PostgreSQL and >= 50x faster than load-all.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert, text, update
from sqlalchemy.engine import Engine
from sqlmodel import Session

from nekoflow.memory.history import load_history, load_history_naive, load_history_rows
from nekoflow.storage import create_all, make_engine
from nekoflow.storage.dialogue import Line, Role, Save

DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
BATCH = 10_000


def generate_lines(total: int, path_len: int, seed: int = 7) -> tuple[list[dict], int]:
    """Rows for one save (save_id 1) in creation order; returns (rows, active leaf id).

    Every path step is followed by side lines: mostly continuing the current side branch, now and
    then opening a new branch off a random earlier path line (a regenerated or edited reply).
    """
    rng = random.Random(seed)
    side_total = total - path_len
    rows: list[dict] = []
    now = datetime.now(UTC).replace(tzinfo=None)
    path_ids: list[int] = []
    side_tip: int | None = None

    def add(parent: int | None) -> int:
        line_id = len(rows) + 1
        user = line_id % 2 == 1
        rows.append(
            {
                "id": line_id,
                "save_id": 1,
                "parent_line_id": parent,
                "attribute": "user" if user else "assistant",
                "content": f"第{line_id}句台词,内容随便写一些用于测试的文字",
                "original_emotion": None if user else rng.choice(["开心", "好奇", "担心"]),
                "tts_content": None if user else f"セリフ{line_id}",
                "action_content": None,
                "display_name": "莱姆" if user else "钦灵",
                "role_id": None if user else 1,
                "turn_id": f"turn-{line_id // 2}",
                "created_at": now,
            }
        )
        return line_id

    for step in range(path_len):
        path_ids.append(add(path_ids[-1] if path_ids else None))
        quota = side_total * (step + 1) // path_len - side_total * step // path_len
        for _ in range(quota):
            if side_tip is None or rng.random() < 0.05:
                side_tip = add(rng.choice(path_ids))
            else:
                side_tip = add(side_tip)
    return rows, path_ids[-1]


def load_dataset(engine: Engine, rows: list[dict], leaf_id: int) -> int:
    """Bulk-insert the role, the save and every line; returns the save id."""
    with Session(engine) as session:
        role = Role.new("钦灵")
        session.add(role)
        session.flush()
        save = Save(role_id=role.id, scope_id="bench")
        session.add(save)
        session.commit()
        save_id = save.id
    assert save_id == 1, "the generated rows use save_id 1"
    with engine.begin() as conn:
        for start in range(0, len(rows), BATCH):
            conn.execute(insert(Line.__table__), rows[start : start + BATCH])
        conn.execute(
            update(Save.__table__).where(Save.__table__.c.id == 1).values(last_message_id=leaf_id)
        )
        conn.execute(text("ANALYZE"))
    return 1


def timed(
    engine: Engine, fn: Callable[[Session], list[Any]], runs: int
) -> tuple[list[float], list[int]]:
    """Run ``fn`` in a fresh session ``runs`` times after one warm-up; seconds per run."""
    with Session(engine) as s:
        ids = [line.id for line in fn(s)]  # warm-up (and the answer, for the equality check)
    out = []
    for _ in range(runs):
        with Session(engine) as s:
            t0 = time.perf_counter()
            fn(s)
            out.append(time.perf_counter() - t0)
    return out, ids


def bench_backend(name: str, engine: Engine, total: int, path_len: int, runs: int) -> None:
    create_all(engine)
    t0 = time.perf_counter()
    rows, leaf = generate_lines(total, path_len)
    save_id = load_dataset(engine, rows, leaf)
    del rows  # time the loads in a worker-sized heap, not next to 200,000 generated dicts
    gc.collect()
    print(
        f"[{name}] dataset: {total:,} lines, active path {path_len:,}, "
        f"built in {time.perf_counter() - t0:.1f} s"
    )
    cte, cte_ids = timed(engine, lambda s: load_history(s, save_id), runs)
    rows, row_ids = timed(engine, lambda s: load_history_rows(s, save_id), runs)
    naive, naive_ids = timed(engine, lambda s: load_history_naive(s, save_id), max(1, runs // 5))
    assert cte_ids == row_ids == naive_ids, "the approaches disagree"
    assert len(cte_ids) == path_len, "wrong path length"
    n = statistics.median(naive)
    report = [("recursive CTE, Line rows", cte), ("recursive CTE, light rows", rows)]
    for label, times in [*report, ("load-all + walk (seed)", naive)]:
        print(
            f"[{name}] {label:26s}: median {statistics.median(times) * 1e3:8.2f} ms"
            f"  (min {min(times) * 1e3:.2f} ms, {len(times)} runs)"
        )
    for label, times in report:
        print(
            f"[{name}] ratio {label:20s}: {n / statistics.median(times):5.0f}x faster than load-all"
        )


def sqlite_engine() -> Iterator[Engine]:
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'bench.db'}")
        try:
            yield engine
        finally:
            engine.dispose()


def pg_engine(url: str) -> Iterator[Engine]:
    schema = f"bench_history_{os.getpid()}"
    admin = make_engine(url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    engine = make_engine(url, connect_args={"options": f"-csearch_path={schema}"})
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20,000 lines, path 500")
    parser.add_argument("--lines", type=int, help="lines in the save (default 200,000)")
    parser.add_argument("--path", type=int, help="active path length (default 2,000)")
    parser.add_argument("--runs", type=int, default=None, help="timed CTE runs (default 20)")
    parser.add_argument(
        "--pg-url", default=os.environ.get("NEKOFLOW_BENCH_DATABASE_URL", DEFAULT_PG_URL)
    )
    parser.add_argument("--no-pg", action="store_true", help="skip PostgreSQL")
    args = parser.parse_args()
    total = args.lines or (20_000 if args.quick else 200_000)
    path_len = args.path or (500 if args.quick else 2_000)
    runs = args.runs or (5 if args.quick else 20)

    for engine in sqlite_engine():
        bench_backend("sqlite", engine, total, path_len, runs)
    if not args.no_pg:
        for engine in pg_engine(args.pg_url):
            bench_backend("postgresql", engine, total, path_len, runs)


if __name__ == "__main__":
    main()
