"""Benchmark: match_entries_v2 (cached Aho-Corasick index) vs a plain per-entry substring scan.

Synthetic CJK books of 5,000 and 20,000 entries × 4 keywords; a 200-char user message, 2,000 chars
of assistant text and 2,000 chars of history, each with a few real keywords planted. Both matchers
run on the same data in the same run and must return the same hits. Prints the median time per
call, the speed-up, and the index build time (measured separately, cold cache).

    python bench/bench_worldbook.py            # full run
    python bench/bench_worldbook.py --quick    # fewer repetitions
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from nekoflow.worldbook import (
    WorldBook,
    WorldBookEntry,
    WorldBookRecallConfig,
    WorldBookRecallContext,
    match_entries_v2,
)
from nekoflow.worldbook.automaton import CompiledBookCache, compile_book
from nekoflow.worldbook.models import ENTRY_TYPE_PRIORITY, SOURCE_SCORES

CJK = [chr(0x4E00 + i) for i in range(3000)]
TYPES = list(ENTRY_TYPE_PRIORITY)


def make_book(n: int, rng: random.Random) -> WorldBook:
    """A book of ``n`` entries with 4 CJK keywords (2–4 chars) each."""
    entries = []
    for i in range(n):
        entries.append(
            WorldBookEntry(
                id=f"e{i}",
                name=f"条目{i}",
                keywords=["".join(rng.choices(CJK, k=rng.randint(2, 4))) for _ in range(4)],
                content="设定" * rng.randint(20, 100),
                priority=rng.randint(0, 100),
                match_mode="all" if i % 10 == 0 else "any",
                trigger_sources=["user", "assistant_recent", "history"],
                always_on=i % 4000 == 1,
                entry_type=rng.choice(TYPES),
            )
        )
    return WorldBook(id=f"bench-{n}", name="bench", entries=entries, updated_at="2024-01-01")


def make_text(length: int, book: WorldBook, planted: int, rng: random.Random) -> str:
    """Random CJK text of ``length`` chars with ``planted`` keywords of ``book`` in it."""
    chars = rng.choices(CJK, k=length)
    for _ in range(planted):
        kw = rng.choice(rng.choice(book.entries).keywords)
        at = rng.randrange(0, length - len(kw))
        chars[at : at + len(kw)] = list(kw)
    return "".join(chars[:length])


def plain_match(
    ctx: WorldBookRecallContext, books: list[WorldBook], cfg: WorldBookRecallConfig
) -> list[tuple[str, list[str], int]]:
    """The straightforward matcher: every keyword of every entry tested with ``in``."""
    texts = {
        "user": ctx.latest_user_message,
        "assistant_recent": ctx.assistant_recent_text,
        "history": ctx.history_text,
    }
    lowered = {k: v.lower() for k, v in texts.items()}
    rows = []
    for bi, book in enumerate(books):
        for ei, e in enumerate(book.entries):
            if not e.enabled:
                continue
            if e.always_on:
                rows.append((bi, ei, e, ["always"]))
                continue
            sources = []
            nonempty = [k for k in e.keywords if k]
            for src, text in texts.items():
                if src not in e.trigger_sources or not text:
                    continue
                if src == "assistant_recent" and (
                    e.priority < cfg.min_assistant_priority or e.entry_type == "secret"
                ):
                    continue
                subject = text if e.case_sensitive else lowered[src]
                found = [k for k in nonempty if (k if e.case_sensitive else k.lower()) in subject]
                if found and (e.match_mode == "any" or len(found) == len(nonempty)):
                    sources.append(src)
            if sources:
                rows.append((bi, ei, e, sources))

    def rank(row: tuple, extra: int = 0) -> tuple:
        bi, ei, e, sources = row
        score = sum(SOURCE_SCORES[s] for s in sources) + e.priority + e.weight + extra
        return (-score, -e.priority, -ENTRY_TYPE_PRIORITY[e.entry_type], len(e.content), bi, ei)

    asst = sorted((r for r in rows if "assistant_recent" in r[3]), key=rank)
    for r in asst[cfg.max_assistant_triggered_entries :]:
        r[3].remove("assistant_recent")
    rows = sorted((r for r in rows if r[3]), key=rank)
    out = []
    total = cfg.max_total_chars
    budget = {"always": cfg.max_always_chars, "scene": cfg.max_scene_chars}
    budget["keyword"] = cfg.max_keyword_chars
    for r in rows:
        if len(out) >= cfg.max_entries:
            break
        e, sources = r[2], r[3]
        cls = "always" if sources == ["always"] else "keyword"
        if len(e.content) > total or len(e.content) > budget[cls]:
            continue
        total -= len(e.content)
        budget[cls] -= len(e.content)
        out.append((e.id, sources, -rank(r)[0]))
    return out


def median_ms(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def run(n: int, reps_fast: int, reps_plain: int, rng: random.Random) -> None:
    book = make_book(n, rng)
    ctx = WorldBookRecallContext(
        latest_user_message=make_text(200, book, 3, rng),
        assistant_recent_text=make_text(2000, book, 10, rng),
        history_text=make_text(2000, book, 10, rng),
    )
    cfg = WorldBookRecallConfig()

    t0 = time.perf_counter()
    compile_book(book)
    build_ms = (time.perf_counter() - t0) * 1000

    cache = CompiledBookCache()
    fast = match_entries_v2(ctx, [book], config=cfg, cache=cache)  # warms the cache
    got = [(r.entry.id, r.trigger_sources, r.score) for r in fast]
    want = plain_match(ctx, [book], cfg)
    assert got == want, f"results differ:\n{got}\n{want}"

    fast_ms = median_ms(lambda: match_entries_v2(ctx, [book], config=cfg, cache=cache), reps_fast)
    plain_ms = median_ms(lambda: plain_match(ctx, [book], cfg), reps_plain)
    print(
        f"{n:>6} entries: automaton {fast_ms:7.3f} ms/call (median of {reps_fast}) | "
        f"plain scan {plain_ms:8.2f} ms/call (median of {reps_plain}) | "
        f"speed-up {plain_ms / fast_ms:6.1f}x | index build {build_ms:7.1f} ms | "
        f"{len(fast)} hits"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    reps_fast, reps_plain = (100, 5) if args.quick else (1000, 30)
    print("world-book matching: 200-char user message, 2,000 chars assistant, 2,000 chars history")
    for n in (5_000, 20_000):
        run(n, reps_fast, reps_plain, rng)
    print("targets: >= 50x faster at 5,000 entries; <= 3 ms median at 20,000 entries")


if __name__ == "__main__":
    main()
