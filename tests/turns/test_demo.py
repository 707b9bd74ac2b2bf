"""``nekoflow demo`` on embedded defaults: no services, a fresh process, the real chain."""

from __future__ import annotations

import os
import subprocess
import sys


def test_demo_runs_without_services(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEKOFLOW_")}
    env["COLUMNS"] = "160"
    # unreachable Redis: the demo must not need it
    env["NEKOFLOW_REDIS_URL"] = "redis://127.0.0.1:1/0"
    out = subprocess.run(
        [sys.executable, "-m", "nekoflow.cli", "demo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "embedded mode" in text
    assert (
        text.count("dispatch → before_turn → llm_call → memory_build → review → apply_deltas") == 6
    )
    assert "skipped: not_triggered" in text
    assert "猫薄荷 (user" in text  # the keyword entry fires once …
    cooldown = text.split("same keyword, in cooldown")[1].split("qq group: not mentioned")[0]
    wb_line = cooldown.split("world book:")[1].splitlines()[0]
    assert "世界基础规则" in wb_line and "猫薄荷" not in wb_line  # … then cools down
    assert "plot node: 约定一起去天台看星星" in text
    assert "time since last turn: 3天" in text
    assert "web:conversation:demo-web" in text and "qq:group:424242" in text
    assert "failed" not in text
