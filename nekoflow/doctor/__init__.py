"""``nekoflow doctor``: one check per part of a deployment, each ✓ or what to fix.

:mod:`.rules` decides (pure), :mod:`.probes` asks the services, :mod:`.platforms` the chat
platforms; :func:`run_checks` runs them all for the CLI and ``GET /healthz?deep=1``.
"""

from __future__ import annotations

from nekoflow.doctor.rules import Check

__all__ = ["Check", "run_checks"]


def run_checks(settings: object | None = None, *, timeout: float = 2.0) -> list[Check]:
    """Every check, in the order they are printed (settings default: the process's)."""
    from nekoflow.doctor.runner import run_checks as run

    return run(settings, timeout=timeout)
