"""CI's dependency audit never fails CI because the network is closed: one clear line instead."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_an_unreachable_vulnerability_service_skips_the_audit_with_one_line() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "NEKOFLOW_VENV": sys.prefix,
        "NEKOFLOW_AUDIT_PROBE_URL": f"http://127.0.0.1:{port}/pypi/pip/24.0/json",
    }
    out = subprocess.run(
        ["bash", str(REPO / ".ci" / "audit")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().splitlines() == [
        f"pip-audit skipped: its vulnerability service (http://127.0.0.1:{port}/pypi/pip/24.0/json)"
        " is not reachable from here"
    ]
    assert "bash .ci/audit" in (REPO / ".ci" / "run").read_text()
