"""Benchmark: ``build_memory`` on a 10,000-line active path (target <= 20 ms).

The path mixes the target character, a narrator, another character, user runs inside and outside
the braces and system lines, so every branch of the builder runs. The baseline measured in the
same run is a naive builder written the obvious way (``+=`` string building and a look-ahead
scan for each user line), to show what single-pass, join-based building buys.

    python bench/bench_build_memory.py           # 10,000 lines
    python bench/bench_build_memory.py --quick   # 2,000 lines
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

from nekoflow.memory import build_memory
from nekoflow.storage.dialogue import Line


def make_path(n: int, seed: int = 3) -> list[dict[str, Any]]:
    """A realistic multi-speaker path of ``n`` lines (dicts with Line's field names)."""
    rng = random.Random(seed)
    lines: list[dict[str, Any]] = [
        {"attribute": "system", "content": "你叫钦灵,进行角色扮演", "role_id": 1}
    ]
    while len(lines) < n:
        r = rng.random()
        if r < 0.40:
            lines.append(
                {
                    "attribute": "assistant",
                    "content": f"第{len(lines)}句,钦灵说了一些话。" * 2,
                    "original_emotion": rng.choice(["开心", "好奇", None]),
                    "tts_content": "こんにちは、ライム",
                    "action_content": rng.choice(["摇尾巴", None]),
                    "display_name": "钦灵",
                    "role_id": 1,
                }
            )
        elif r < 0.75:
            lines.append(
                {"attribute": "user", "content": "你好呀钦灵,今天怎么样", "display_name": "莱姆"}
            )
        elif r < 0.88:
            lines.append(
                {"attribute": "assistant", "content": "夜深了,风吹过窗台", "display_name": "旁白"}
            )
        elif r < 0.98:
            lines.append(
                {
                    "attribute": "assistant",
                    "content": "我在帮钦灵挑衣服呢~",
                    "original_emotion": "开心",
                    "action_content": "歪头",
                    "display_name": "白小喵",
                    "script_role_id": "1",
                }
            )
        else:
            lines.append({"attribute": "system", "content": "白小喵的设定", "script_role_id": "1"})
    return lines[:n]


def naive_build(lines: list[dict[str, Any]], role_id: int) -> list[dict[str, str]]:
    """The obvious implementation: quadratic look-ahead and ``+=`` strings (baseline only)."""
    out: list[dict[str, str]] = []
    ctx = ""
    outside = ""
    reply = ""
    for i, line in enumerate(lines):
        mine = line.get("role_id") == role_id
        if line["attribute"] == "system":
            if mine or not (line.get("role_id") or line.get("script_role_id")):
                out.append({"role": "system", "content": line["content"]})
            continue
        if line["attribute"] == "user":
            if reply:
                out.append({"role": "assistant", "content": reply})
                reply = ""
            nxt = next((x for x in lines[i + 1 :] if x["attribute"] != "user"), None)
            if nxt is not None and nxt.get("role_id") != role_id:
                ctx += (
                    "\n" if ctx else ""
                ) + f"{line.get('display_name') or '用户'}:{line['content']}"
            else:
                outside += line["content"]
        elif mine:
            if ctx or outside:
                out.append({"role": "user", "content": (f"{{{ctx}}}\n" if ctx else "") + outside})
                ctx = outside = ""
            emo = f"【{line['original_emotion']}】" if line.get("original_emotion") else ""
            tts = f"<{line['tts_content']}>" if line.get("tts_content") else ""
            act = f"({line['action_content']})" if line.get("action_content") else ""
            reply += emo + line["content"] + tts + act
        else:
            if reply:
                out.append({"role": "assistant", "content": reply})
                reply = ""
            act = f"({line['action_content']})" if line.get("action_content") else ""
            ctx += (
                "\n" if ctx else ""
            ) + f"{line.get('display_name') or '未知'}:{line['content']}{act}"
    return out


def timed(fn: Any, runs: int) -> list[float]:
    fn()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 lines, fewer runs")
    parser.add_argument("--lines", type=int, help="path length (default 10,000)")
    args = parser.parse_args()
    n = args.lines or (2_000 if args.quick else 10_000)
    runs = 10 if args.quick else 30
    dicts = make_path(n)
    objects = [Line(save_id=1, **d) for d in dicts]  # transient ORM rows: instrumented attributes
    messages = build_memory(dicts, role_id=1)
    assert build_memory(objects, role_id=1) == messages

    results = {
        "build_memory (dicts)": timed(lambda: build_memory(dicts, role_id=1), runs),
        "build_memory (Line rows)": timed(lambda: build_memory(objects, role_id=1), runs),
        "naive builder (baseline)": timed(lambda: naive_build(dicts, 1), max(3, runs // 5)),
    }
    print(f"{n:,} lines -> {len(messages):,} messages")
    for label, times in results.items():
        print(
            f"{label:28s}: median {statistics.median(times) * 1e3:7.2f} ms"
            f"  (min {min(times) * 1e3:.2f} ms, {len(times)} runs)"
        )
    base = statistics.median(results["naive builder (baseline)"])
    for label in ("build_memory (dicts)", "build_memory (Line rows)"):
        print(f"{label:28s}: {base / statistics.median(results[label]):.1f}x faster than baseline")


if __name__ == "__main__":
    main()
