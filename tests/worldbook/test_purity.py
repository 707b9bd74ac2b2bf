"""The pure core (models, matcher, automaton, injector, cooldowns, PromptStack) does no I/O."""

from __future__ import annotations

import subprocess
import sys


def test_pure_core_imports_neither_sql_redis_nor_celery() -> None:
    code = (
        "import sys\n"
        "import nekoflow.worldbook, nekoflow.worldbook.matcher, nekoflow.worldbook.automaton\n"
        "import nekoflow.worldbook.injector, nekoflow.worldbook.cooldowns, nekoflow.prompt\n"
        "import nekoflow.worldbook.collect, nekoflow.worldbook.selection, nekoflow.worldbook.keys\n"
        "import nekoflow.worldbook.placement, nekoflow.worldbook.budgets, nekoflow.tokens\n"
        "import nekoflow.worldbook.st_import, nekoflow.worldbook.st_export\n"
        "import nekoflow.worldbook.hits, nekoflow.worldbook.index, nekoflow.worldbook.texts\n"
        "bad = [m for m in ('redis', 'sqlalchemy', 'sqlmodel', 'celery') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""
