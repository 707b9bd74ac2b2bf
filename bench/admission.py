"""Benchmark: what the conversation-flow admission path adds to ``enqueue_turn``.

In one run, on PostgreSQL and Redis, the same realistic QQ group messages (NapCat-shaped OneBot
events from many users in many groups) are submitted twice:

(interleaved message by message, so both see the same load and table sizes)

- **baseline**: ``on_busy = queue``, no rate limits, no quotas (today's behaviour);
- **admission**: ``on_busy = merge`` (the scope lookup and conditional merge), per-user, per-group
  and per-channel rate limits (one sliding-window Lua call in Redis), plus the daily token
  quota check the turn makes before its LLM call (an MGET of today's Redis counters), timed per
  message.

Every message opens its own group scope, so both variants write a new turn. The chain's
publication is replaced by a no-op so that only the enqueue path is measured.
Prints p50/p99 of each, the admission's added p50 and the target (≤ 1 ms).

    python bench/admission.py                      # 2,000 messages per variant
    python bench/admission.py --messages 5000 --pg-url postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time
import uuid

DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/10"
SCHEMA = "bench_admission"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--messages", type=int, default=2000, help="messages per variant")
    p.add_argument("--pg-url", default=os.environ.get("NEKOFLOW_BENCH_PG_URL", DEFAULT_PG_URL))
    p.add_argument("--redis-url", default=DEFAULT_REDIS_URL, help="rate-limit store (flushed!)")
    return p.parse_args()


def onebot_group_message(rng: random.Random, group: int, n: int) -> dict:
    """A NapCat-style OneBot v11 group message that @-mentions the bot."""
    user = 20000 + rng.randrange(5000)
    text = rng.choice(["今天天气怎么样", "你还记得我吗", "白塔在哪里", "讲个故事吧", "晚安"])
    return {
        "time": int(time.time()),
        "self_id": 10001,
        "post_type": "message",
        "message_type": "group",
        "sub_type": "normal",
        "message_id": n,
        "group_id": 70000 + group,
        "user_id": user,
        "message": [
            {"type": "at", "data": {"qq": "10001"}},
            {"type": "text", "data": {"text": f" {text}"}},
        ],
        "raw_message": f"[CQ:at,qq=10001] {text}",
        "font": 0,
        "sender": {"user_id": user, "nickname": f"用户{user}", "card": "", "role": "member"},
    }


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    args = parse_args()
    from sqlalchemy import create_engine, text

    admin = create_engine(args.pg_url)
    with admin.begin() as conn:
        conn.execute(text(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))
        conn.execute(text(f"CREATE SCHEMA {SCHEMA}"))
    sep = "&" if "?" in args.pg_url else "?"
    os.environ.update(
        NEKOFLOW_DATABASE_URL=f"{args.pg_url}{sep}options=-csearch_path%3D{SCHEMA}",
        NEKOFLOW_REDIS_URL=args.redis_url,
        NEKOFLOW_BROKER_URL=args.redis_url,
        NEKOFLOW_ADAPTER_OPTIONS='{"qq": {"bot_uin": 10001}}',
        NEKOFLOW_RUNTIME_CONFIG_PATH="/nonexistent/config.ini",
    )
    import redis

    from nekoflow.flow.policy import FlowConfig, FlowPolicy, OnBusy, Rate
    from nekoflow.settings import Settings
    from nekoflow.storage.dialogue import Role
    from nekoflow.turns.deps import TurnDeps
    from nekoflow.turns.enqueue import submit_turn
    from nekoflow.turns.usage import check_quota

    redis.Redis.from_url(args.redis_url).flushdb()
    settings = Settings()
    published: list[str] = []
    deps = TurnDeps.from_settings(settings, publish=lambda run: published.append(run.turn_id))
    from sqlmodel import Session

    with Session(deps.engine) as s:
        s.add(Role.new("钦灵"))
        s.commit()
    admission = FlowPolicy(
        on_busy=OnBusy.merge,
        rate_limit_user=Rate(count=1000, period=60),
        rate_limit_group=Rate(count=10000, period=60),
        rate_limit_channel=Rate(count=100000, period=60),
        daily_tokens_user=1_000_000,
    )
    rng = random.Random(7)
    run_tag = uuid.uuid4().int % 1_000_000

    baseline = FlowConfig(default=FlowPolicy())
    with_admission = FlowConfig(default=admission)

    def one(config: FlowConfig, n: int, quota: bool) -> float:
        deps.flow = config
        # Each message opens its own group scope, so both variants write a new turn and the
        # admission variant pays its full path (a merge lookup that finds no queued turn).
        ev = onebot_group_message(rng, n, run_tag + n)
        t0 = time.perf_counter()
        handle = submit_turn(deps, "qq", ev)
        if quota:  # what the turn checks before its LLM call
            check_quota(deps, "qq", scope="", user=str(ev["user_id"]), character="1")
        elapsed = (time.perf_counter() - t0) * 1000
        assert handle.turn_id or handle.reason, handle
        return elapsed

    for i in range(200):  # warm-up (connections, caches)
        one(baseline if i % 2 else with_admission, 10_000_000 + i, bool(i % 2))
    base: list[float] = []
    adm: list[float] = []
    for i in range(args.messages):  # interleaved: both variants see the same load and table size
        base.append(one(baseline, 20_000_000 + 2 * i, False))
        adm.append(one(with_admission, 20_000_001 + 2 * i, True))
    b50, a50 = statistics.median(base), statistics.median(adm)
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        f"messages per variant: {args.messages}, each the first of its group scope (every "
        "message makes a new turn: the merge lookup finds nothing to join), PostgreSQL, Redis"
    )
    print(f"enqueue_turn, queue policy (baseline): p50 {b50:.3f} ms  p99 {pct(base, 0.99):.3f} ms")
    print(
        f"enqueue_turn + admission (merge, 3 rate limits, quota check): p50 {a50:.3f} ms  "
        f"p99 {pct(adm, 0.99):.3f} ms"
    )
    print(f"admission adds p50 {a50 - b50:+.3f} ms (target <= 1 ms); ratio {a50 / b50:.2f}x")
    with admin.begin() as conn:
        conn.execute(text(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))


if __name__ == "__main__":
    main()
