"""No private name crosses a module boundary: nekoflow's modules (and the checkout's aliases)
never import another module's ``_name`` nor reach for ``module._name``.

What several modules share is public (``nekoflow.turns.lines``, the stages' ``common``); what one
module keeps to itself stays behind its underscore. Read from the source (AST), so it is cheap.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("nekoflow", "tasks", "celeryconfig.py", "bench")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def crossings(source: str, filename: str) -> list[str]:
    """Each ``from <ours> import _x`` and ``<our module>._x`` in ``source``."""
    tree = ast.parse(source, filename)
    ours: set[str] = set()  # local names bound to one of our modules
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (
            node.level or (node.module or "").split(".")[0] in ("nekoflow", "tasks")
        ):
            for alias in node.names:
                if _private(alias.name):
                    where = f"{filename}:{node.lineno}"
                    found.append(f"{where}: from {node.module} import {alias.name}")
                else:
                    ours.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("nekoflow", "tasks", "celeryconfig"):
                    ours.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in ours
        ):
            found.append(f"{filename}:{node.lineno}: {node.value.id}.{node.attr}")
    return sorted(found)


def test_the_checker_sees_both_forms() -> None:
    source = (
        "from nekoflow.turns.stages.common import _request, render\n"
        "from nekoflow.doctor import platforms\n"
        "import nekoflow.worker.runtime as rt\n"
        "x = platforms._settings_error(1) + rt._deps + render.__name__\n"
        "from os import _exit\n"
    )
    assert crossings(source, "m.py") == [
        "m.py:1: from nekoflow.turns.stages.common import _request",
        "m.py:4: platforms._settings_error",
        "m.py:4: rt._deps",
    ]


def test_no_private_name_crosses_a_module_boundary() -> None:
    files = []
    for root in ROOTS:
        path = REPO / root
        files += sorted(path.glob("**/*.py")) if path.is_dir() else [path]
    assert any(f.name == "lines.py" for f in files)
    found = [
        hit
        for path in files
        for hit in crossings(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    ]
    assert found == []
