"""CLI start-up: wall time of ``nekoflow <cmd>`` (median of N runs) and the import cost that
``python -X importtime`` attributes to the heaviest top-level modules, in one run.

Baselines: the bare interpreter (``python -c pass``) and the issue's targets (0.3 s for --help
and version, 0.6 s before a command starts its work).
Run: ``.venv/bin/python bench/cli_startup.py``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time

RUNS = 7
COMMANDS: list[tuple[list[str], float]] = [
    (["version"], 0.3),
    (["--help"], 0.3),
    (["runs", "--help"], 0.6),
    (["worldbook", "--help"], 0.6),
    (["turn", "--help"], 0.6),
    (["serve", "--help"], 0.6),
    (["runs"], 0.6),  # a command doing its work: settings, engine, tables, one query (SQLite)
]


def wall(argv: list[str], cwd: str) -> float:
    """Median wall time of running ``argv``."""
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def top_imports(args: list[str], cwd: str, n: int = 5) -> list[tuple[str, int]]:
    """The ``n`` top-level packages with the largest cumulative import time (µs)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "nekoflow", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    totals: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = (
            part.strip() for part in line.removeprefix("import time:").split("|")
        )
        if not cumulative.isdigit() or name.startswith(" "):
            continue
        if line.split("|")[-1].startswith("  "):  # nested import: counted in its parent
            continue
        totals[name.split(".")[0]] = totals.get(name.split(".")[0], 0) + int(cumulative)
    return sorted(totals.items(), key=lambda kv: -kv[1])[:n]


def main() -> None:
    """Print the figures."""
    with tempfile.TemporaryDirectory() as cwd:
        bare = wall([sys.executable, "-c", "pass"], cwd)
        print(f"python -c pass: {bare:.3f} s (median of {RUNS})")
        for args, target in COMMANDS:
            seconds = wall([sys.executable, "-m", "nekoflow", *args], cwd)
            verdict = "ok" if seconds <= target else "OVER"
            print(
                f"nekoflow {' '.join(args):<18} {seconds:.3f} s  target {target:.1f} s "
                f"({seconds / target:.2f}x target, {seconds / bare:.1f}x bare python) {verdict}"
            )
            heavy = ", ".join(f"{name} {us / 1000:.0f} ms" for name, us in top_imports(args, cwd))
            print(f"    importtime top-level: {heavy}")


if __name__ == "__main__":
    main()
