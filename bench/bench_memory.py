"""Benchmark: long-term memory retrieval, prompt assembly on a long save, and recall@5.

On SQLite (a file, FTS5) and PostgreSQL (tsvector + GIN), in one run:

- **retrieval**: one turn's ``prompt_memories`` (full-text candidates + importance/recency pool,
  BM25 + importance + recency scoring, token budget, summaries) with 100,000 memories in the
  scope, p50/p99 over varied Chinese and English messages — beside today's query (the scope's
  unexpired memories, importance then newest, 50 rows) on the same table. Target ≤ 10 ms p50.
- **prompt assembly** for a 50,000-line save: the active path's newest ``history_limit`` lines
  (recursive CTE), the token-sized window, the messages, summaries + retrieved memories, and the
  system prompt with a corpus world book's lore. Target ≤ 20 ms p50.
- **recall@5** on a small self-written set: 24 facts (names, promises, preferences, plans, in
  Chinese and English) each planted weeks before 300 unrelated memories, then asked about with
  different wording; hit = the fact among the first five memories. New retrieval vs today's
  "importance then newest" ordering.

    python bench/bench_memory.py                      # both databases
    python bench/bench_memory.py --memories 20000 --no-pg
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert, text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, or_, select

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nekoflow.macros import MacroContext
from nekoflow.memory import build_memory
from nekoflow.memory.consolidate import facts_of
from nekoflow.memory.history import get_or_create_save, load_history_rows
from nekoflow.memory.lexical import doc_terms, index_text, scope_token
from nekoflow.memory.retrieve import prompt_memories, retrieve
from nekoflow.memory.settings import MemorySettings
from nekoflow.memory.store import apply_stats, stat_delta
from nekoflow.memory.window import window
from nekoflow.storage import create_all, make_engine
from nekoflow.storage.dialogue import Line, Role
from nekoflow.storage.memory import DOCS, LENGTH, MemoryRound, round_stats_key
from nekoflow.storage.turns import MemoryRecord
from nekoflow.tokens import estimate_tokens
from nekoflow.turns.prompting import assemble_prompt, placement_from_entries
from nekoflow.turns.stages.prompt import user_context, window_start

DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
NOW = datetime(2026, 9, 1, tzinfo=UTC)
MS = MemorySettings()
REL = {"affection": 60, "trust": 50, "familiarity": 30, "dependency": 30, "security": 50}
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "lide_ai_v3.json"

ZH_SUBJECTS = ["用户", "角色", "小明", "老师", "同事", "邻居", "猫咪", "妈妈", "朋友", "店长"]
ZH_VERBS = [
    "喜欢",
    "讨厌",
    "提到",
    "想去",
    "买了",
    "聊起",
    "梦见",
    "担心",
    "约好",
    "忘了",
    "学会",
    "弄丢",
]
ZH_OBJECTS = [
    "咖啡",
    "火锅",
    "海边",
    "图书馆",
    "吉他",
    "雨伞",
    "电影",
    "地铁",
    "蛋糕",
    "公园",
    "游戏",
    "考试",
    "面包",
    "钢琴",
    "雪山",
    "台风",
    "手机",
    "书店",
    "花园",
    "演唱会",
    "烤肉",
    "小说",
    "跑步",
    "画画",
    "樱花",
    "温泉",
    "夜市",
    "动物园",
    "博物馆",
    "奶茶",
]
EN_WORDS = [
    "coffee",
    "beach",
    "library",
    "guitar",
    "umbrella",
    "movie",
    "subway",
    "cake",
    "park",
    "game",
    "exam",
    "bread",
    "piano",
    "mountain",
    "storm",
    "phone",
    "bookstore",
    "garden",
    "concert",
    "barbecue",
    "novel",
    "running",
    "painting",
    "museum",
    "tea",
    "train",
    "island",
    "festival",
    "market",
    "kitten",
]
MESSAGES = [
    "你还记得我喜欢喝什么吗",
    "上次说的那家书店在哪里",
    "我们什么时候去海边",
    "今天又下雨了,好烦",
    "Do you remember the concert?",
    "what did I say about the piano",
    "我最近在学画画",
    "晚上一起吃火锅吧",
    "the kitten broke my phone again",
    "你觉得我该不该去考试",
]


def sentence(rng: random.Random) -> tuple[str, str]:
    """A random memory (title, content), Chinese mostly, English sometimes."""
    if rng.random() < 0.25:
        words = rng.sample(EN_WORDS, 3)
        return words[0], f"The user talked about the {words[0]}, the {words[1]} and a {words[2]}"
    s, v, o = rng.choice(ZH_SUBJECTS), rng.choice(ZH_VERBS), rng.choice(ZH_OBJECTS)
    o2 = rng.choice(ZH_OBJECTS)
    return f"{s}{v}{o}", f"用户:{s}{v}{o},还说起了{o2}\n角色:记住啦"


def settle(engine: Engine, *tables: str) -> None:
    """PostgreSQL: what autovacuum does after a bulk load — VACUUM (the GIN indexes' pending
    lists merged into the index: a fresh bulk load leaves megabytes every query would scan
    linearly) and ANALYZE."""
    if engine.dialect.name != "postgresql":
        return
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for table in tables:
            conn.execute(text(f"VACUUM ANALYZE {table}"))


def fill(engine: Engine, role_id: int, scope: str, n: int, rng: random.Random) -> None:
    """``n`` memories in one scope over the past months (bulk insert + term statistics)."""
    delta: Counter[tuple[str, str]] = Counter()
    batch: list[dict[str, Any]] = []
    with Session(engine) as s:
        for i in range(n):
            title, content = sentence(rng)
            at = NOW - timedelta(hours=rng.uniform(1, 24 * 120))
            rec = MemoryRecord(
                role_id=role_id,
                scope_id=scope,
                title=title,
                content=content,
                importance=round(rng.uniform(0.1, 0.9), 2),
                ttl="long",
                expires_at=NOW + timedelta(days=rng.uniform(-10, 180)),
                created_at=at,
                updated_at=at,
                kind="fact",
            )
            rec.terms = index_text(role_id, scope, title, content)
            rec.fact_key = facts_of(title, content).key
            stat_delta(rec, +1, delta)
            batch.append(rec.model_dump(exclude={"id"}))
            if len(batch) == 5000 or i == n - 1:
                s.execute(insert(MemoryRecord), batch)
                batch = []
        apply_stats(s, delta)
        s.commit()
    settle(engine, "memory_record", "memory_term_stat")


def old_query(s: Session, role_id: int, scope: str, limit: int = 50) -> list[MemoryRecord]:
    """Today's prompt memories: unexpired, most important then newest."""
    return list(
        s.exec(
            select(MemoryRecord)
            .where(
                MemoryRecord.role_id == role_id,
                MemoryRecord.scope_id == scope,
                or_(col(MemoryRecord.expires_at).is_(None), col(MemoryRecord.expires_at) > NOW),
            )
            .order_by(col(MemoryRecord.importance).desc(), col(MemoryRecord.created_at).desc())
            .limit(limit)
        ).all()
    )


def timed(fn: Callable[[int], object], rounds: int) -> tuple[float, float]:
    """(p50, p99) milliseconds."""
    fn(0)
    samples = []
    for i in range(rounds):
        t0 = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def bench_retrieval(engine: Engine, role_id: int, n: int, rounds: int) -> None:
    """Retrieval with ``n`` memories in the scope, beside today's query."""
    rng = random.Random(7)
    t0 = time.perf_counter()
    fill(engine, role_id, "bench:big", n, rng)
    print(f"  filled {n:,} memories in {time.perf_counter() - t0:.1f} s")
    with Session(engine) as s:

        def new(i: int) -> object:
            return prompt_memories(
                s,
                role_id=role_id,
                scope_id="bench:big",
                message=MESSAGES[i % len(MESSAGES)],
                context=[MESSAGES[(i + 3) % len(MESSAGES)]],
                now=NOW,
                settings=MS,
            )

        def old(i: int) -> object:
            return old_query(s, role_id, "bench:big")

        p50, p99 = timed(new, rounds)
        o50, o99 = timed(old, rounds)
        got = new(1)
    print(
        f"  retrieval, {n:,} memories in the scope: p50 {p50:.2f} ms, p99 {p99:.2f} ms "
        f"({len(got.used)} memories, {got.tokens} tokens) | today's importance-then-newest "
        f"query: p50 {o50:.2f} ms, p99 {o99:.2f} ms | target <= 10 ms p50"
    )


def long_save(engine: Engine, role_id: int, lines: int, memories: int = 2000) -> int:
    """A save whose active path is ``lines`` lines long (bulk insert, explicit ids), each user
    line indexed as a past round as ``write_turn`` does, and ``memories`` memories."""
    with Session(engine) as s:
        save = get_or_create_save(s, role_id=role_id, scope_id="bench:save")
        s.commit()
        assert save.id is not None
        save_id = save.id
        base = (s.exec(select(Line.id).order_by(col(Line.id).desc())).first() or 0) + 1
    rng = random.Random(3)
    rows = []
    for i in range(lines):
        user = i % 2 == 0
        rows.append(
            {
                "id": base + i,
                "save_id": save_id,
                "parent_line_id": base + i - 1 if i else None,
                "attribute": "user" if user else "assistant",
                "content": sentence(rng)[1].split("\n")[0] if user else "嗯嗯,我记住了,你继续说",
                "role_id": None if user else role_id,
                "display_name": "小明" if user else "钦灵",
                "turn_id": f"b{i // 2}",
                "created_at": NOW - timedelta(minutes=lines - i),
            }
        )
    rounds = [
        {
            "role_id": role_id,
            "scope_id": "bench:save",
            "save_id": save_id,
            "turn_id": r["turn_id"],
            "line_id": r["id"],
            "created_at": r["created_at"],
            "user_text": r["content"],
            "reply_text": "嗯嗯,我记住了,你继续说",
            "terms": index_text(role_id, "bench:save", "", r["content"]),
        }
        for r in rows
        if r["attribute"] == "user"
    ]
    key = round_stats_key(scope_token(role_id, "bench:save"))
    delta: Counter[tuple[str, str]] = Counter()
    for r in rounds:
        words = doc_terms(r["terms"])
        delta[(key, DOCS)] += 1
        delta[(key, LENGTH)] += len(words)
        for w in set(words):
            delta[(key, w[:64])] += 1
    with engine.begin() as conn:
        for k in range(0, lines, 5000):
            conn.execute(insert(Line), rows[k : k + 5000])
        for k in range(0, len(rounds), 5000):
            conn.execute(insert(MemoryRound), rounds[k : k + 5000])
        conn.execute(
            text("UPDATE save SET last_message_id = :leaf WHERE id = :id"),
            {"leaf": base + lines - 1, "id": save_id},
        )
        if engine.dialect.name == "postgresql":
            conn.execute(text("ANALYZE line"))
            conn.execute(
                text("SELECT setval(pg_get_serial_sequence('line', 'id'), :v)"), {"v": base + lines}
            )
    with Session(engine) as s:
        apply_stats(s, delta)
        s.commit()
    fill(engine, role_id, "bench:save", memories, random.Random(5))
    settle(engine, "line", "memory_round", "memory_record", "memory_term_stat")
    return save_id


def lore() -> Any:
    """The corpus card's world book as the turn's lore (empty when the corpus is absent)."""
    if not CORPUS.exists():
        return placement_from_entries([]), 0
    from nekoflow.characters import parse_card

    parsed = parse_card(CORPUS.read_bytes())
    entries = parsed.book.entries if parsed.book else []
    return placement_from_entries(entries), len(entries)


def bench_assembly(
    engine: Engine, role_id: int, lines: int, rounds: int, memories: int = 2000
) -> None:
    """before_turn's reads and prompt assembly for a ``lines``-line save."""
    save_id = long_save(engine, role_id, lines, memories)
    placement, n_entries = lore()
    ctx = MacroContext(char="钦灵", user="小明", now=NOW, seed="turn-1")

    def turn(i: int) -> object:
        message = MESSAGES[i % len(MESSAGES)]
        with Session(engine) as s:
            rows = load_history_rows(s, save_id, limit=200)
            got = prompt_memories(
                s,
                role_id=role_id,
                scope_id="bench:save",
                message=message,
                context=user_context(rows),
                now=NOW,
                settings=MS,
                below_line=window_start(rows, message, MS),
            )
        prompt = assemble_prompt(
            role_name="钦灵",
            profile="你叫钦灵,是一只猫娘。",
            card=None,
            scene={},
            real_time_label=None,
            continuity=None,
            relationship=REL,
            memories=got.block,
            lore=placement,
            macros=ctx,
        )
        room = max(MS.context_tokens - estimate_tokens(prompt.system), MS.min_window_tokens)
        kept = window(rows, room, estimate_tokens)
        return build_memory(kept, role_id=role_id)

    p50, p99 = timed(turn, rounds)
    print(
        f"  prompt assembly, {lines:,}-line save ({n_entries} lore entries, {memories:,} "
        f"memories, {lines // 2:,} past rounds): "
        f"p50 {p50:.2f} ms, p99 {p99:.2f} ms | target <= 20 ms p50"
    )


RECALL_SET: list[tuple[str, str, str]] = [
    ("名字", "我叫林小雨,以后叫我小雨就好", "你还记得我叫什么名字吗"),
    ("生日", "我的生日是十月十七号", "我生日是哪天来着"),
    ("约定", "我答应你,等樱花开了一起去京都", "我们约好樱花开的时候去哪"),
    ("过敏", "我对花生过敏,一点都不能吃", "这个点心里有花生,我能吃吗"),
    ("宠物", "我家的猫叫团子,是只橘猫", "团子最近怎么样了你知道吗"),
    ("工作", "我在一家游戏公司做美术", "我是做什么工作的"),
    ("喜好", "我最喜欢的水果是芒果", "给我推荐点水果吧,你知道我爱吃啥"),
    ("害怕", "我特别怕打雷,打雷就睡不着", "今晚有雷阵雨,好紧张"),
    ("家乡", "我老家在云南大理", "过年我要回老家了,你还记得是哪吗"),
    ("乐器", "我在学大提琴,已经学了三个月", "你猜我最近在练什么乐器"),
    ("愿望", "我的愿望是去冰岛看极光", "如果有假期你觉得我会想去哪"),
    ("朋友", "我最好的朋友叫阿杰,认识十年了", "阿杰约我周末出去"),
    ("承诺", "我保证下次考试一定考进前十名", "考试成绩出来了,你还记得我说过什么吗"),
    ("饮食", "我不吃香菜,一点都受不了", "晚上吃越南粉,要不要加香菜"),
    ("书", "我最近在读三体,看到第二部了", "我那本书读到哪了"),
    ("运动", "每周三晚上我都去游泳", "周三晚上我一般在干嘛"),
    (
        "name",
        "My name is Theodore but everyone calls me Teddy",
        "Do you remember what people call me?",
    ),
    (
        "promise",
        "I promise I will bring you the red umbrella on Friday",
        "Did I promise you something about an umbrella?",
    ),
    ("allergy", "I am allergic to shellfish", "Can I eat the shrimp pasta?"),
    ("hometown", "I grew up in a small town called Maple Creek", "Where did I grow up again?"),
    ("pet", "My dog Biscuit is a golden retriever", "How old do you think Biscuit is?"),
    (
        "plan",
        "We decided to visit the aquarium next spring",
        "What did we decide to visit in spring?",
    ),
    ("favourite", "My favourite band is Radiohead", "Which band do I like the most?"),
    ("job", "I work as a nurse on night shifts", "Why am I always tired in the morning?"),
]


def bench_recall(engine: Engine, role_id: int, fillers: int) -> None:
    """recall@5 of the planted fact: new retrieval vs importance-then-newest."""
    rng = random.Random(11)
    new_hits = old_hits = 0
    for k, (title, fact, question) in enumerate(RECALL_SET):
        scope = f"bench:recall:{k}"
        at = NOW - timedelta(days=rng.uniform(21, 60))
        with Session(engine) as s:
            rec = MemoryRecord(
                role_id=role_id,
                scope_id=scope,
                title=title,
                content=fact,
                importance=0.5,
                ttl="long",
                expires_at=at + timedelta(days=180),
                created_at=at,
                updated_at=at,
            )
            from nekoflow.memory.store import write_memories
            from nekoflow.settings import Settings

            write_memories(s, [rec], now=at, settings=Settings(database_url="sqlite://"))
            s.commit()
            fact_id = rec.id
        fill(engine, role_id, scope, fillers, rng)
        with Session(engine) as s:
            ranked = retrieve(
                s,
                role_id=role_id,
                scope_id=scope,
                message=question,
                context=[],
                now=NOW,
                settings=MS,
            )
            new_hits += fact_id in [r.id for r in ranked[:5]]
            old_hits += fact_id in [m.id for m in old_query(s, role_id, scope, 5)]
    n = len(RECALL_SET)
    print(
        f"  recall@5 over {n} planted facts ({fillers} later memories each): "
        f"new retrieval {new_hits / n:.2f} ({new_hits}/{n}) | "
        f"importance-then-newest {old_hits / n:.2f} ({old_hits}/{n})"
    )


def run(name: str, engine: Engine, args: argparse.Namespace) -> None:
    """Every benchmark on one database."""
    create_all(engine)
    with Session(engine) as s:
        role = Role(name=f"bench-{uuid.uuid4().hex[:6]}")
        s.add(role)
        s.commit()
        assert role.id is not None
        role_id = role.id
    print(f"{name}:")
    if "retrieval" not in args.skip:
        bench_retrieval(engine, role_id, args.memories, args.rounds)
    bench_assembly(engine, role_id, args.lines, args.rounds, args.assembly_memories)
    if "recall" not in args.skip:
        bench_recall(engine, role_id, args.fillers)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--memories", type=int, default=100_000)
    p.add_argument("--lines", type=int, default=50_000)
    p.add_argument("--assembly-memories", type=int, default=100_000)
    p.add_argument("--skip", default="", help="comma list of: retrieval, recall")
    p.add_argument("--fillers", type=int, default=300)
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--pg-url", default=os.environ.get("NEKOFLOW_BENCH_PG_URL", DEFAULT_PG_URL))
    p.add_argument("--no-pg", action="store_true")
    args = p.parse_args()
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        platform.processor(),
    )
    print(f"machine: {os.cpu_count()} CPUs, {cpu}, Python {platform.python_version()}")
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/bench.db")
        run("SQLite (file, WAL, FTS5)", engine, args)
        engine.dispose()
    if args.no_pg:
        return
    schema = f"bench_memory_{uuid.uuid4().hex[:6]}"
    admin = make_engine(args.pg_url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        engine = make_engine(args.pg_url, connect_args={"options": f"-csearch_path={schema}"})
        run("PostgreSQL (tsvector + GIN)", engine, args)
        engine.dispose()
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


if __name__ == "__main__":
    main()
